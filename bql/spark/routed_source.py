"""``sbpy_routed``: the journal source of a keyed query, whose reads hand Spark packed rows.

A keyed plan's first Python step runs over the journal rows in their read partitions anyway — the
stateless router of a plan without upstream stages (``keyed_ops.JournalRouter``: each tuple's partition
key, its rows packed per bucket) or the packing of the rows for a one-group router (a keyed window
plan's, or the ``RouterCore`` running upstream stages), whose pandas ``transformWithState`` would
otherwise regroup every journal row in Python.
As a ``mapInPandas`` after ``sbpy_journal`` that step costs every journal row a trip Python (the read)
→ JVM → Python (Arrow, then pandas) and back. This source is ``sbpy_journal`` (same options, offsets,
admission limit and seq-range partitions) whose ``read`` runs that step itself over the range it read,
in chunks of ``READ_BATCH`` journal rows as the ``mapInPandas`` frames were, and yields only its
output:

- ``mode=route`` (``_b int, rows string``: ``keyed_query.PACK_SCHEMA``): ``keyed_query.route_rows`` — the keyed
  operator's input, one row per bucket with rows in the chunk;
- ``mode=pack`` (``_g int, rows string``): the chunk's journal rows as one
  JSON list (``keyed_query.pack_journal_rows``) — a one-group router's input.

Option ``keyed``: what the step needs (query id, plan, topology, buckets), pickled and base64-encoded
(``encode_keyed``, ``journal_source.pickled_option``), unpickled once per worker process. Progress counts journal seqs, as for a source
sending ranges (``journal_source.count_range_rows``): Spark counts the packed rows.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from sbpy.bql.runtime import gc_pause

from . import journal_format as jf
from .journal_source import READ_BATCH, JournalStreamReader, arrow_schema_of, pickled_option, unpickled_option

NAME = "sbpy_routed"
MODES = {"route": "_b int, rows string", "pack": "_g int, rows string"}


def encode_keyed(query_id: str, plan: Any, topology: str, buckets: int) -> str:
    """The ``keyed`` option of a read: the plan the worker routes or packs for."""
    return pickled_option((query_id, plan, topology, int(buckets)))


def mode_of(options: Any) -> str:
    """The ``mode`` option, checked."""
    mode = options.get("mode") or ""
    if mode not in MODES:
        raise ValueError(f"the {NAME} source's 'mode' option is one of {sorted(MODES)}, not '{mode}'")
    return mode


class RoutedStreamReader(JournalStreamReader):
    """``JournalStreamReader`` whose partitions yield the keyed plan's packed rows (module doc)."""

    def __init__(self, options: dict[str, str]):
        super().__init__(options)
        self.mode = mode_of(options)
        self.keyed = options.get("keyed") or ""
        if not self.keyed:
            raise ValueError(f"the {NAME} source needs the 'keyed' option")
        if self.ranges:
            raise ValueError(f"the {NAME} source reads entries, not ranges")

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from . import keyed_query

        with gc_pause.paused():  # the read's rows are acyclic (``gc_pause``)
            rows = jf.read_entries(self.dir, self.inputs, partition.after, partition.upto)  # type: ignore[attr-defined]
        query_id, plan, topology, buckets = unpickled_option(self.keyed)
        schema = arrow_schema(self.mode)
        for start in range(0, len(rows), READ_BATCH):
            chunk = rows[start:start + READ_BATCH]
            if self.mode == "route":
                packs = keyed_query.route_rows(query_id, plan, topology, buckets, chunk)
            else:
                packs = [(0, keyed_query.pack_journal_rows(chunk))]
            if packs:
                yield batch_of(packs, schema)


def batch_of(packs: list[tuple[int, str]], schema: Any) -> Any:
    """``(grouping value, text)`` pairs as one Arrow record batch of ``schema``."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([p[0] for p in packs], type=schema[0].type),
                                       pa.array([p[1] for p in packs], type=schema[1].type)], schema=schema)


def arrow_schema(mode: str) -> Any:
    """The mode's schema as pyspark converts a data source's schema for its reads (it compares them)."""
    return arrow_schema_of(MODES[mode])


class RoutedDataSource(DataSource):
    """The ``sbpy_routed`` streaming source (read-only)."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return MODES[mode_of(self.options)]

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RoutedStreamReader(dict(self.options))


def register(spark: Any) -> None:
    """Register ``sbpy_routed`` with a session (idempotent)."""
    spark.dataSource.register(RoutedDataSource)
