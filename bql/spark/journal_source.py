"""``sbpy_journal``: a PySpark Python streaming data source reading a topology journal.

Options: ``dir`` (the topology's journal folder), ``inputs`` (comma-separated node names),
``start_seq`` (read entries with seq > start_seq; default 0; ignored when a query restarts from its
checkpoint), ``max_seqs`` (admission limit: at most this many seqs per micro-batch; default
``DEFAULT_MAX_SEQS`` = 1M, so a large file journaled at once in segments is not one huge batch;
negative: no limit),
``partitions`` (a micro-batch of at least ``2 * min_piece`` seqs is read in up to this many seq ranges,
one Spark partition each, so reading uses every core; default 2), ``min_piece`` (the smallest range,
default ``MIN_PIECE`` = 10,000 seqs).

Offsets are ``{"seq": N}``; the latest offset is the journal's HEAD. Rows are
``(seq long, input string, ts long, data string, end boolean, error string)`` where ``data`` is the
tagged JSON text of the tuple's map (``journal_format.decode_data``), null for an end marker and for a
line of a file segment that is no tuple, whose ``error`` says why (the consumers report it on
``dropped_tuples``). Seqs may have gaps. With several partitions a micro-batch's rows reach a consumer
in no particular order: every consumer sorts by ``seq``. Reading runs in Spark's Python workers, so it
only reads files.

Usage::

    register(spark)
    df = (spark.readStream.format("sbpy_journal").option("dir", d)
          .option("inputs", "src1,src2").load())
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from pyspark.sql.types import StructType

from . import journal_format as jf

NAME = "sbpy_journal"
SCHEMA = "seq long, input string, ts long, data string, end boolean, error string"
MIN_PIECE = 10_000  # seqs: a micro-batch is never split into smaller read ranges
DEFAULT_PARTITIONS = 2
DEFAULT_MAX_SEQS = 1_000_000


def split_range(after: int, upto: int, pieces: int, min_piece: int = MIN_PIECE) -> list[tuple[int, int]]:
    """``(after, upto]`` as up to ``pieces`` consecutive ranges of at least ``min_piece`` seqs."""
    n = max(1, min(pieces, (upto - after) // max(1, min_piece)))
    bounds = [after + (upto - after) * i // n for i in range(n + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(n)]


class _Range(InputPartition):
    """One read range of a micro-batch: entries with ``after < seq <= upto``."""

    def __init__(self, after: int, upto: int):
        super().__init__((after, upto))
        self.after = after
        self.upto = upto


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
        return [_Range(a, b) for a, b in split_range(after, upto, self.pieces, self.min_piece)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        rows = jf.read_entries(self.dir, self.inputs, partition.after, partition.upto)  # type: ignore[attr-defined]
        return iter(rows)

    def commit(self, end: dict) -> None:
        pass


class JournalDataSource(DataSource):
    """The ``sbpy_journal`` streaming source (read-only)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return JournalStreamReader(dict(self.options))


def register(spark: Any) -> None:
    """Register ``sbpy_journal`` with a session (idempotent)."""
    spark.dataSource.register(JournalDataSource)
