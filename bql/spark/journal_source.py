"""``sbpy_journal``: a PySpark Python streaming data source reading a topology journal.

Options: ``dir`` (the topology's journal folder), ``inputs`` (comma-separated node names),
``start_seq`` (read entries with seq > start_seq; default 0; ignored when a query restarts from its
checkpoint), ``max_seqs`` (optional admission limit: at most this many seqs per micro-batch).

Offsets are ``{"seq": N}``; the latest offset is the journal's HEAD. Rows are
``(seq long, input string, ts long, data string, end boolean)`` where ``data`` is the tagged JSON text
of the tuple's map (``journal_format.decode_data``) and null for an end marker. Reading runs in Spark's
Python workers, so it only reads files.

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
SCHEMA = "seq long, input string, ts long, data string, end boolean"


class _Range(InputPartition):
    """One micro-batch: entries with ``after < seq <= upto``."""

    def __init__(self, after: int, upto: int):
        super().__init__((after, upto))
        self.after = after
        self.upto = upto


class JournalStreamReader(DataSourceStreamReader):
    """Offsets are journal seqs; one partition per micro-batch (a merged, seq-ordered read)."""

    def __init__(self, options: dict[str, str]):
        self.dir = options.get("dir") or ""
        if not self.dir:
            raise ValueError("the sbpy_journal source needs the 'dir' option")
        self.inputs = tuple(n for n in (options.get("inputs") or "").split(",") if n)
        self.start_seq = int(options.get("start_seq") or 0)
        self.max_seqs = int(options.get("max_seqs") or 0)

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
        return [_Range(after, upto)] if upto > after else []

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
