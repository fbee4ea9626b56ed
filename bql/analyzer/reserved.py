"""SensorBee's reserved words (core/reservedwords.go): they cannot name a node or a topology.

Generated from the design notes' list; compared case-insensitively. Field selectors are not affected.
"""

RESERVED_WORDS: frozenset[str] = frozenset(
    """
    abort absolute accelerated action add after all allocate alter analyze and any are array as asc
    assertion at atomic authorization avg before begin between binary binarynull bind bit blank boolean
    both break bucket by call cascade cascaded case cast catalog chain char character check close
    cluster coalesce cobol collate collation collection column commit committed condition connect
    connection constraint constraints continue convert correlate corresponding count create createtab
    cross cs curdate current cursor curtime database dataset datastore date day dcompress deallocate
    dec decimal decimalseparatorcomma declare default deferrable deferred delete derived desc describe
    descriptor diagnostics dictionary disconnect distinct do domain double drop each element else
    elseif end escape every ex except exception exclude exclusive exec execute exists explain external
    extract false fetch first flatten float fn for foreign found from full function get global go goto
    grant group gsi handler having hour identity if immediate in include index indicator initially
    inline inner inout input insensitive insert int integer internal intersect interval into is
    isolation join key keys keyspace language last leading leave left legacyownername length let
    letting level like limit local logical login loop lower lsm map mapping mask match matched
    materialized max merge millisecond min minus minute missing modifiable modify module money month
    names namespace national natural nchar nest new next no normal not notfound now null nullif number
    numeric octet_length of off offset old on only open openmode option or order out outer output over
    overlaps owner owneraccess pad pagesize parse partial partition password path pool position
    preallocate precision prepare preserve primary print prior private privilege privileges procedure
    public range raw read readonly real realm reduce references referencing relative release rename
    repeat repeatable replace replication resignal restrict return returning returns revoke right role
    rollback row rowcount rows satisfies savepoint schema scroll second section security seg select
    self serializable session set show signal size smallint some space sql sqlcode sqlerror
    sqlexceptions sqlstate sqlwarnings start statement statistics string stringnull substring sum
    svbegin svend system table temporary then threshold time timestamp to top trailing transaction
    translate translation trigger triggerstampmisc trim truncate ts type uncommitted under undo union
    unique unknown unnest unset until updatable update upper upsert usage use user using validate value
    valued values varchar varying verify view when whenever where while with within work write xor year
    zone
    """.split()
)
