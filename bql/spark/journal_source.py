"""``sbpy_journal``: a PySpark Python streaming data source reading a topology journal.

Options: ``dir`` (the topology's journal folder), ``inputs`` (comma-separated node names),
``start_seq`` (read entries with seq > start_seq; default 0; ignored when a query restarts from its
checkpoint), ``max_seqs`` (admission limit: at most this many seqs per micro-batch; default
``DEFAULT_MAX_SEQS`` = 1M, so a large file journaled at once in segments is not one huge batch;
negative: no limit),
``partitions`` (a micro-batch of at least ``2 * min_piece`` seqs is read in up to this many seq ranges,
one Spark partition each, so reading uses every core; default 2), ``min_piece`` (the smallest range,
default ``MIN_PIECE`` = 10,000 seqs), ``ranges`` ("1": a micro-batch of at least ``ranges_from`` seqs,
default ``MIN_PIECE``, is one row naming its seq range, ``(upto, RANGE_INPUT, after, null, false, null)``,
and its one consumer reads the entries itself with ``expand_ranges``: the fused operator, which runs in
one group anyway, then gets a large batch's rows without their trip through Arrow, a shuffle and
pandas; smaller batches, for which that trip costs little, come as rows. ``bql/spark/query`` asks for it
in the snapshot layout only: the logged layout's small batches measured slower with it, README
"Session 13 B4").

Offsets are ``{"seq": N}``; the latest offset is the journal's HEAD. Rows are
``(seq long, input string, ts long, data string, end boolean, error string)`` where ``data`` is the
tagged JSON text of the tuple's map (``journal_format.decode_data``), null for an end marker and for a
line of a file segment that is no tuple, whose ``error`` says why (the consumers report it on
``dropped_tuples``). Seqs may have gaps. With several partitions a micro-batch's rows reach a consumer
in no particular order: every consumer sorts by ``seq``. Reading runs in Spark's Python workers, so it
only reads files. A range's rows leave the reader as Arrow record batches of ``READ_BATCH`` rows
(``arrow_batches``: a column at a time), not as tuples that pyspark would check and append to Arrow
builders one field at a time.

Usage::

    register(spark)
    df = (spark.readStream.format("sbpy_journal").option("dir", d)
          .option("inputs", "src1,src2").load())
"""
from __future__ import annotations

import base64
import functools
import json
import pickle
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StructType

from sbpy.bql.runtime import gc_pause

from . import journal_format as jf

NAME = "sbpy_journal"
SCHEMA = "seq long, input string, ts long, data string, end boolean, error string"
MIN_PIECE = 10_000  # seqs: a micro-batch is never split into smaller read ranges
DEFAULT_PARTITIONS = 2
DEFAULT_MAX_SEQS = 1_000_000
RANGE_INPUT = "\x00range"  # the input of a range row (no node name starts with a control character)
READ_BATCH = 10_000  # rows per Arrow record batch a read yields (Spark's arrow.maxRecordsPerBatch default)


def split_range(after: int, upto: int, pieces: int, min_piece: int = MIN_PIECE) -> list[tuple[int, int]]:
    """``(after, upto]`` as up to ``pieces`` consecutive ranges of at least ``min_piece`` seqs."""
    n = max(1, min(pieces, (upto - after) // max(1, min_piece)))
    bounds = [after + (upto - after) * i // n for i in range(n + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(n)]


class _Range(InputPartition):
    """One read range of a micro-batch: entries with ``after < seq <= upto``; ``whole``: the batch is sent
    as its range (option ``ranges``), not as its entries."""

    def __init__(self, after: int, upto: int, whole: bool = False):
        super().__init__((after, upto))
        self.after = after
        self.upto = upto
        self.whole = whole


class JournalStreamReader(DataSourceStreamReader):
    """Offsets are journal seqs; a micro-batch is read in one or more seq ranges (merged, seq-ordered
    within each)."""

    def __init__(self, options: dict[str, str]):
        self.dir = options.get("dir") or ""
        if not self.dir:
            raise ValueError("the sbpy_journal source needs the 'dir' option")
        self.inputs = tuple(n for n in (options.get("inputs") or "").split(",") if n)
        self.start_seq = int(options.get("start_seq") or 0)
        self.max_seqs = int(options.get("max_seqs") or DEFAULT_MAX_SEQS)
        self.pieces = max(1, int(options.get("partitions") or DEFAULT_PARTITIONS))  # not ``partitions``: a method
        self.min_piece = int(options.get("min_piece") or MIN_PIECE)
        self.ranges = (options.get("ranges") or "") == "1"
        self.ranges_from = int(options.get("ranges_from") or MIN_PIECE)

    def initialOffset(self) -> dict:
        return {"seq": self.start_seq}

    def getDefaultReadLimit(self) -> Any:
        return ReadMaxRows(self.max_seqs) if self.max_seqs > 0 else ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        head = jf.read_head(self.dir)
        if start is not None:
            after = int(start["seq"])
            head = max(head, after)
            max_rows = getattr(limit, "max_rows", None) or getattr(limit, "maxRows", None)
            if max_rows:
                head = min(head, after + int(max_rows))
        return {"seq": head}

    def reportLatestOffset(self) -> dict | None:
        return {"seq": jf.read_head(self.dir)}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        after, upto = int(start["seq"]), int(end["seq"])
        if upto <= after:
            return []
        if self.ranges and upto - after >= self.ranges_from:
            return [_Range(after, upto, whole=True)]
        return [_Range(a, b) for a, b in split_range(after, upto, self.pieces, self.min_piece)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        if partition.whole:  # type: ignore[attr-defined]
            return iter([(partition.upto, RANGE_INPUT, partition.after, None, False, None)])  # type: ignore[attr-defined]
        with gc_pause.paused():  # the read's rows are acyclic (``gc_pause``)
            rows = jf.read_entries(self.dir, self.inputs, partition.after, partition.upto)  # type: ignore[attr-defined]
            return iter(list(arrow_batches(rows)))

    def commit(self, end: dict) -> None:
        pass


def arrow_batches(rows: list[tuple], size: int = READ_BATCH) -> Iterator[Any]:
    """``rows`` (``SCHEMA``'s tuples) as ``pyarrow.RecordBatch`` es of at most ``size`` rows, with the
    Arrow schema pyspark expects of a reader of ``SCHEMA`` (it compares them)."""
    import pyarrow as pa

    schema = arrow_schema()
    for start in range(0, len(rows), size):
        chunk = rows[start:start + size]
        columns = [pa.array([r[i] for r in chunk], type=f.type) for i, f in enumerate(schema)]
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def pickled_option(payload: Any) -> str:
    """``payload`` as a source option's text (pickled, base64): what a read needs besides the journal."""
    return base64.b64encode(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)).decode("ascii")


_UNPICKLED: dict[str, Any] = {}  # per worker process: option text -> payload


def unpickled_option(text: str) -> Any:
    """The payload of a ``pickled_option`` text, unpickled once per worker process (not per read)."""
    payload = _UNPICKLED.get(text)
    if payload is None:
        payload = _UNPICKLED[text] = pickle.loads(base64.b64decode(text))
    return payload


def arrow_schema() -> Any:
    """``SCHEMA`` as pyspark converts a data source's schema for its reads (no JVM needed)."""
    return arrow_schema_of(SCHEMA)


@functools.lru_cache(maxsize=8)
def arrow_schema_of(ddl: str) -> Any:
    """A data source's schema (``"name type, ..."``, types ``long``, ``int``, ``string``, ``boolean``) as
    pyspark converts it for the source's reads, which it compares with each batch's schema."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField, StructType

    types = {"long": LongType(), "int": IntegerType(), "string": StringType(), "boolean": BooleanType()}
    fields = [f.split() for f in ddl.split(", ")]
    struct = StructType([StructField(name, types[kind]) for name, kind in fields])
    return to_arrow_schema(struct, timezone="UTC")


class JournalDataSource(DataSource):
    """The ``sbpy_journal`` streaming source (read-only)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return JournalStreamReader(dict(self.options))


def expand_ranges(rows: list[tuple], journal_dir: str, inputs: Sequence[str]) -> list[tuple]:
    """``rows`` (sorted by seq) with each range row replaced by the entries of its range (``ranges``)."""
    if not any(r[1] == RANGE_INPUT for r in rows):
        return rows
    out: list[tuple] = []
    for row in rows:
        if row[1] == RANGE_INPUT:
            out.extend(jf.read_entries(journal_dir, tuple(inputs), row[2], row[0]))
        else:
            out.append(row)
    return out


def count_range_rows(progress: dict[str, Any] | None) -> dict[str, Any] | None:
    """A progress report of a query reading ``ranges`` (Spark counts one row for a batch sent as its
    range) with each source's ``numInputRows``, the total and the processing rate counted in journal
    seqs (its end offset minus its start offset)."""
    if not progress or not progress.get("sources"):
        return progress
    out = dict(progress)
    sources, total = [], 0
    for src in out["sources"]:
        seqs = max(0, _offset_seq(src.get("endOffset")) - _offset_seq(src.get("startOffset")))
        sources.append(dict(src, numInputRows=seqs))
        total += seqs
    out["sources"], out["numInputRows"] = sources, total
    seconds = (out.get("batchDuration") or 0) / 1000
    if seconds > 0:
        out["processedRowsPerSecond"] = total / seconds
    return out


def _offset_seq(offset: Any) -> int:
    if isinstance(offset, str):
        offset = json.loads(offset)
    return int(offset["seq"]) if isinstance(offset, dict) and "seq" in offset else 0


def register(spark: Any) -> None:
    """Register ``sbpy_journal`` with a session (idempotent)."""
    spark.dataSource.register(JournalDataSource)
