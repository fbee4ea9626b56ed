"""``sbpy_stateless``: the journal source that runs a memoryless chain while it reads (one Python pass).

The stateless execution's stages depend on each tuple alone, so they can run where the tuples are
read. This source is ``sbpy_journal`` (same options, offsets, partitions and read ranges) plus the
option ``chain``: the query's stages, pickled and base64-encoded (``encode_chain``). Each partition
reads its seq range and feeds it, sorted by seq, to the same ``Pipeline`` the sequential operator
hosts (``stateless_query.run_rows``: exact by construction), and yields the pipeline's output rows as
Arrow record batches in ``OUTPUT_SCHEMA``. Compared with ``sbpy_journal`` → ``mapInArrow`` it saves
the journal rows' trip Python → JVM → Python (two Arrow conversions and a ``to_pylist`` per column).

The driver restores arrival order by ``(seq, idx)`` exactly as before (``stateless_query.collector``).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from sbpy.bql.runtime import gc_pause

from . import journal_format as jf
from .journal_source import JournalStreamReader, pickled_option, unpickled_option
from .operator import OUTPUT_COLUMNS, OUTPUT_SCHEMA, StageSpec

NAME = "sbpy_stateless"
BATCH_ROWS = 65_536  # output rows per Arrow record batch


def encode_chain(query_id: str, stages: Sequence[StageSpec], topology: str, out_format: str) -> str:
    """The ``chain`` option: what a partition needs to build (or find cached) its pipeline."""
    return pickled_option((query_id, out_format, topology, list(stages)))


def decode_chain(text: str) -> tuple[str, str, str, list[StageSpec]]:
    """The chain of a ``chain`` option, unpickled once per worker process (not per partition read)."""
    return unpickled_option(text)


def record_batches(rows: list[tuple], size: int = BATCH_ROWS) -> Iterator[Any]:
    """Output rows ``(kind, node, seq, idx, ts, data, error, input, event)`` as Arrow record batches."""
    import pyarrow as pa

    types = _types()
    for start in range(0, len(rows), size):
        columns = list(zip(*rows[start:start + size]))
        yield pa.RecordBatch.from_arrays([pa.array(list(col), type=typ) for col, typ in zip(columns, types)],
                                         names=OUTPUT_COLUMNS)


_TYPES: list[Any] = []


def _types() -> list[Any]:
    if not _TYPES:
        import pyarrow as pa

        kinds = dict(kind=pa.string(), node=pa.string(), seq=pa.int64(), idx=pa.int64(), ts=pa.int64(),
                     data=pa.string(), error=pa.string(), input=pa.string(), event=pa.string())
        _TYPES.extend(kinds[c] for c in OUTPUT_COLUMNS)
    return _TYPES


class StatelessStreamReader(JournalStreamReader):
    """``JournalStreamReader`` whose partitions yield the chain's output rows, not journal rows."""

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        text = options.get("chain") or ""
        if not text:
            raise ValueError("the sbpy_stateless source needs the 'chain' option")
        self.chain = text

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from .stateless_query import chain_pipeline, run_rows

        query_id, out_format, topology, stages = decode_chain(self.chain)
        with gc_pause.paused():  # the read's rows are acyclic (``gc_pause``): ~0.8 µs a tuple otherwise
            # each tuple's map decoded as its line is read (one parse: ``read_entries`` ``values``)
            rows = jf.read_entries(self.dir, self.inputs, partition.after, partition.upto,  # type: ignore[attr-defined]
                                   values=True)
            if not rows:
                return iter(())
            pipeline = chain_pipeline(query_id, stages, topology, out_format)
            return iter(list(record_batches(run_rows(pipeline, rows))))


class StatelessDataSource(DataSource):
    """The ``sbpy_stateless`` streaming source (read-only)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return OUTPUT_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StatelessStreamReader(dict(self.options))


def register(spark: Any) -> None:
    """Register ``sbpy_stateless`` with a session (idempotent)."""
    spark.dataSource.register(StatelessDataSource)
