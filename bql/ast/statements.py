"""Statement nodes: one class per BQL statement, plus SELECT and its FROM items, windows and EMIT.

Node names (source, stream, sink, state) are stored lower-case (identifiers are case-insensitive);
parameter names lower-case; parameter values are expressions (constants in practice, folded at
execution time).
"""
from __future__ import annotations

from .base import Node, node
from .expressions import Expr, PathStep, SortKey
from .patterns import AfterMatchSkip, Interval, MatchSetting, Measure, PatternTerm, SubsetDef, VariableDef


class Statement(Node):
    """Marker base of statements."""

    __slots__ = ()


@node
class Param(Node):
    """``name = value`` in WITH / SET lists."""

    name: str
    value: Expr


# ---------------------------------------------------------------- SELECT parts


@node
class RangeWindow(Node):
    """``[RANGE n TUPLES|SECONDS|MILLISECONDS [, BUFFER SIZE k] [, WAIT|DROP OLDEST|DROP NEWEST IF FULL]]``.

    ``unit`` is ``tuples``, ``seconds`` or ``milliseconds``; ``drop_mode`` is ``wait``,
    ``drop_oldest``, ``drop_newest`` or None (default: wait).
    """

    value: int | float
    unit: str
    buffer_size: int | None = None
    drop_mode: str | None = None


class FromItem(Node):
    """Marker base of FROM-list items. Every item has ``alias`` (None if not given)."""

    __slots__ = ()


@node
class StreamRef(FromItem):
    """``name [RANGE ...] [AS alias]``; ``window`` None is a bare stream (Timeplus global aggregation)."""

    name: str
    window: RangeWindow | None = None
    alias: str | None = None


@node
class UdsfCall(FromItem):
    """``udsf("stream", arg, ...) [RANGE ...] [AS alias]``; ``name`` lower-case."""

    name: str
    args: tuple[Expr, ...]
    window: RangeWindow | None = None
    alias: str | None = None


@node
class WindowFunction(FromItem):
    """Timeplus-style ``tumble(s, [time,] size)``, ``hop(s, [time,] slide, size)``,
    ``session(s, [time,] gap [, max])``. ``kind`` lower-case. ``intervals`` as written. ``time_zone``: the
    optional last argument of tumble/hop (a checked zone name; windows stay UTC-aligned, docs/timeplus.md).
    ``source``: the subquery the window reads when its stream is a CTE or ``(select)`` (seed 003's
    "tumble over tumble"); ``stream`` is then the CTE's name or the subquery's alias."""

    kind: str
    stream: str
    time_expr: Expr | None
    intervals: tuple[Interval, ...]
    alias: str | None = None
    time_zone: str | None = None
    source: SubqueryRef | None = None


@node
class MatchRecognize(FromItem):
    """``stream [RANGE ..] MATCH_RECOGNIZE ( ... ) [[AS] alias]``, or ``(select) MATCH_RECOGNIZE ...``
    whose ``input`` is then a ``SubqueryRef`` without window (aliased like the MATCH_RECOGNIZE).

    ``rows_per_match`` is ``one`` or ``all``; ``empty_matches`` (ALL ROWS only) is ``show`` (default),
    ``omit`` or ``with_unmatched``.
    """

    input: StreamRef | SubqueryRef
    partition_by: tuple[Expr, ...]
    order_by: tuple[SortKey, ...]
    measures: tuple[Measure, ...]
    rows_per_match: str
    empty_matches: str | None
    after_match: AfterMatchSkip
    pattern: PatternTerm
    within: Interval | None
    subsets: tuple[SubsetDef, ...]
    defines: tuple[VariableDef, ...]
    alias: str | None = None
    settings: tuple[MatchSetting, ...] = ()


@node
class HistoryTable(FromItem):
    """``table(stream) [AS alias]`` (Timeplus): the stream's retained history read once, as a bounded
    relation (docs/timeplus.md, "table()"). ``snapshot`` is the history bound when a query starts
    (``runtime.history.bind_tables``): a tuple of ``runtime.Tuple``; None until then."""

    stream: str
    alias: str | None = None
    snapshot: tuple | None = None


# The alias of a subquery written without one (a Timeplus query's ``FROM (SELECT ...) GROUP BY ...``, the
# input of ``(SELECT ...) MATCH_RECOGNIZE (...)``): not an identifier, so no field prefix names it by accident.
SUBQUERY_ALIAS = "(subquery)"


@node
class SubqueryRef(FromItem):
    """``(select) [RANGE ...] AS alias``: the output stream of a SELECT, read like a stream (a CTE's
    reference desugars to it). ``select`` is a Select or SelectUnion; the alias is required."""

    select: Statement
    window: RangeWindow | None
    alias: str


@node
class AliasPath(Node):
    """An output label: ``x``, ``x.y[3].z`` (keys and non-negative indexes), or ``*`` (``star``)."""

    steps: tuple[PathStep, ...] = ()
    star: bool = False


@node
class Projection(Node):
    """One select-list item: ``expr [AS alias]``."""

    expr: Expr
    alias: AliasPath | None = None


@node
class EmitClause(Node):
    """Timeplus EMIT: ``kind`` is ``after_watermark`` (also AFTER WINDOW CLOSE), ``on_update`` or
    ``periodic``. ``delay`` for the first two, ``period`` and ``repeat`` for periodic. ``AND TIMEOUT t``
    (``timeout``) and ``AND LAST x [ON PROCTIME]`` (``last``, ``last_proctime``); ``implicit``: written
    without a policy (``EMIT LAST 1h``), which the analyzer's prepare step resolves (docs/timeplus.md)."""

    kind: str
    delay: Interval | None = None
    period: Interval | None = None
    repeat: bool = False
    spelled_window_close: bool = False
    timeout: Interval | None = None
    last: Interval | None = None
    last_proctime: bool = False
    implicit: bool = False
    on_update: bool = False  # PERIODIC p ON UPDATE: each period only the groups changed since the last one


@node
class EmitterOption(Node):
    """One SensorBee emitter option inside ``SELECT ISTREAM [ ... ]`` (bql.peg ``EmitterOptions``).

    ``kind`` is ``limit`` (``LIMIT n``: the statement stops after n emitted tuples), ``every_tuple``
    (``EVERY k-TH TUPLE``: the 1st, (k+1)-th, (2k+1)-th ... output tuple), ``every_time`` (``EVERY x
    SECONDS|MILLISECONDS``: the latest output tuple once per x of wall-clock time) or ``sample``
    (``SAMPLE x%``: each output tuple with probability x/100). ``value`` is the number as written
    (int or float) and ``unit`` is ``seconds``/``milliseconds`` for ``every_time``, else ``""``; the
    ordinal suffix of ``k-TH`` is any of ST/ND/RD/TH, as in SensorBee (``suffix`` keeps it).
    """

    kind: str
    value: int | float
    unit: str = ""
    suffix: str = ""


@node
class Select(Statement):
    """``SELECT emitter [DISTINCT] items FROM ... [WHERE] [GROUP BY] [HAVING] [ORDER BY] [LIMIT n] [EMIT ...]``.

    ``emitter`` is ``rstream``, ``istream``, ``dstream`` or None (allowed only with Timeplus forms).
    ``distinct`` keeps one row of each set of equal rows of a step's relation; ``order_by`` sorts the
    relation's rows by keys over the output row; with ``order_by``, ``limit`` is the per-step top-N,
    without it the number of rows after which the query ends (docs/sql-breadth.md).
    """

    emitter: str | None
    projections: tuple[Projection, ...]
    from_items: tuple[FromItem, ...]
    where: Expr | None = None
    group_by: tuple[Expr, ...] = ()
    having: Expr | None = None
    limit: int | None = None
    emit: EmitClause | None = None
    distinct: bool = False
    order_by: tuple[SortKey, ...] = ()
    offset: int | None = None  # LIMIT n OFFSET m (Timeplus queries): the first m result rows are skipped
    # ``a LEFT JOIN b ON c``: from_items are exactly (a, b) and this is c; each step's relation is SQL's
    # LEFT JOIN of the two windows (a row of a without a match gets one row with b NULL-padded), then
    # WHERE filters it (docs/sql-breadth.md). An inner JOIN ... ON has no field: it is WHERE's conjunct.
    left_join_on: Expr | None = None
    # Timeplus: ``PARTITION BY e, ...`` runs the query once per substream (a value of the keys), and
    # ``SETTINGS k = v, ...`` holds its query settings (``MatchSetting`` nodes; docs/timeplus.md).
    partition_by: tuple[Expr, ...] = ()
    settings: tuple[MatchSetting, ...] = ()
    # SensorBee's ``RSTREAM [LIMIT n]`` etc.: at most one sampling option, then at most one LIMIT.
    emitter_options: tuple[EmitterOption, ...] = ()


@node
class SelectUnion(Statement):
    """``select UNION ALL select [UNION ALL ...]``."""

    selects: tuple[Select, ...]


# ---------------------------------------------------------------- DDL / control statements


@node
class CreateSource(Statement):
    name: str
    type_name: str
    params: tuple[Param, ...] = ()
    paused: bool = False


@node
class CreateSink(Statement):
    name: str
    type_name: str
    params: tuple[Param, ...] = ()


@node
class CreateState(Statement):
    name: str
    type_name: str
    params: tuple[Param, ...] = ()


@node
class CreateStreamAsSelect(Statement):
    name: str
    select: Select | SelectUnion


@node
class UpdateNode(Statement):
    """``UPDATE SOURCE|SINK|STATE name SET k = v, ...`` (SensorBee has it; kind lower-case)."""

    kind: str
    name: str
    params: tuple[Param, ...]


@node
class DropNode(Statement):
    """``DROP SOURCE|STREAM|SINK|STATE name``; ``kind`` lower-case."""

    kind: str
    name: str


@node
class InsertInto(Statement):
    """``INSERT INTO sink FROM stream``."""

    sink: str
    stream: str


@node
class SourceControl(Statement):
    """``PAUSE|RESUME|REWIND SOURCE name``; ``action`` lower-case."""

    action: str
    name: str


@node
class SaveState(Statement):
    name: str
    tag: str | None = None


@node
class LoadState(Statement):
    name: str
    type_name: str
    tag: str | None = None
    set_params: tuple[Param, ...] = ()
    create_if_not_saved: bool = False
    create_params: tuple[Param, ...] = ()


@node
class Explain(Statement):
    """``EXPLAIN SELECT ...`` or ``EXPLAIN CREATE STREAM name AS SELECT ...``: the physical plan."""

    statement: Statement


@node
class Eval(Statement):
    """``EVAL expr [ON {map}]``."""

    expr: Expr
    on: Expr | None = None
