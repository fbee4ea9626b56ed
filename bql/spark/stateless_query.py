"""The stateless execution: memoryless stages on every partition, no shuffle, no state store.

A chain whose stages are all memoryless (``sbpy.bql.plan``: RSTREAM over ``[RANGE 1 TUPLES]`` of one
input, no aggregate, no LIMIT, no UDSF, each stage reading one input) gives every journal row the
same rows whichever rows came before it. So the stages run where the journal is read::

    sbpy_stateless (journal read in seq-range partitions, the stages run on each) ──► foreachBatch

(``stateless_source``: one Python pass per tuple, no ``mapInArrow`` hop). Each partition runs the
same ``operator.Pipeline`` the sequential operator hosts (exact by construction), fed the partition's
rows in seq order. A journal row's outputs all come from the partition that read it, numbered in
emission order (``idx``), so the driver restores the sequential order by sorting on ``(seq, idx)``.
An input's end marker is in one partition; since every stage has one input, that partition ends the
stages below it (``end`` rows) and nothing of that input follows. Stage counters come as one ``stat``
row per partition and stage; the consumer adds them up.

There is no operator state: the Spark checkpoint holds only offsets.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sbpy.bql.runtime import gc_pause

from . import journal_format as jf
from .batch_rows import EncodedBatch, TupleBatch, pairs_batch
from .fast_chain import make_pipeline
from .operator import Pipeline, StageSpec
from .query import QueryHandle, QuerySpec, _collect, _ensure_listener, start_writer
from .stateless_source import NAME as SOURCE_NAME
from .stateless_source import encode_chain
from .stateless_source import register as register_source

log = logging.getLogger("sbpy.spark")

# Per worker process: (query id, out format, stage keys) -> Pipeline. Its processors are memoryless;
# only the end flags change, and they are reset for every partition.
_CHAINS: dict[tuple, Pipeline] = {}


def chain_pipeline(query_id: str, stages: list[StageSpec], topology: str, out_format: str) -> Pipeline:
    """The (cached) pipeline of a chain, with fresh end flags; ``out_format`` ``json``: the ``out``
    rows' data is the sink's JSON line (``jsonio.to_json``), not tagged JSON."""
    cache_key = (query_id, out_format, tuple(s.key() for s in stages))
    pipeline = _CHAINS.get(cache_key)
    if pipeline is None:
        pipeline = _CHAINS[cache_key] = make_pipeline(stages, topology)
        if out_format == "json":
            from sbpy.bql.jsonio import to_json

            pipeline.encode_out = to_json
        pipeline.lazy_times = True  # memoryless stages: a tuple's datetime is made only where read
    pipeline.ended_inputs = [set() for _ in pipeline.stages]
    pipeline.ended, pipeline.ended_sources = set(), set()
    return pipeline


def run_rows(pipeline: Pipeline, rows: Any) -> list[tuple]:
    """The output rows of journal rows ``(seq, input, ts, data, end[, error])`` (one partition, any order)."""
    rows = sorted(rows, key=lambda r: r[0])
    return pipeline.run(rows)


def start_stateless_query(spark: Any, spec: QuerySpec) -> QueryHandle:
    """Start ``spec`` (all stages memoryless) on every partition; see the module docstring. A plan whose
    stages are native (``native-jvm``) starts ``native_query`` when the session has its JVM function."""
    if _native_planned(spec):
        from .native_udf import registered

        if registered(spark):
            from .native_query import start_native_query

            return start_native_query(spark, spec)
        log.warning("query '%s': planned native, but the session lacks the native function: "
                    "it runs vectorized", spec.query_id)
    _ensure_listener(spark)
    register_source(spark)
    checkpoint = Path(spec.checkpoint_dir)
    return start_writer(spark, spec, chain_reader(spark, spec, SOURCE_NAME, checkpoint).load(), checkpoint,
                        None, 0, collector(spec))


def chain_reader(spark: Any, spec: QuerySpec, source: str, checkpoint: Path) -> Any:
    """A ``readStream`` of ``source`` (``sbpy_stateless`` or ``sbpy_native``) over the spec's journal inputs
    in one seq-range partition per core, from the start seq pinned in ``checkpoint``, with its chain."""
    start_seq = jf.pin_start_seq(checkpoint, spec.start_seq)
    parallelism = max(1, int(spark.sparkContext.defaultParallelism))
    reader = (spark.readStream.format(source)
              .option("dir", str(spec.journal_dir))
              .option("inputs", ",".join(spec.inputs))
              .option("start_seq", str(start_seq))
              .option("partitions", str(parallelism))
              .option("chain", encode_chain(spec.query_id, spec.stages, spec.topology, spec.out_format)))
    if spec.max_seqs:
        reader = reader.option("max_seqs", str(int(spec.max_seqs)))
    return reader


def _native_planned(spec: QuerySpec) -> bool:
    from sbpy.bql.plan import Tier

    return spec.plan is not None and bool(spec.plan.stages) and all(s.tier is Tier.NATIVE for s in spec.plan.stages)


def _sorted_parts(batch_df: Any) -> tuple[Any, list[dict[str, Any]]] | None:
    """The batch sorted by ``(seq, idx)`` in Arrow: its ``out`` rows as a table, every other row as an
    ``on_batch`` dict (``data`` decoded); None for an empty batch."""
    import pyarrow.compute as pc

    table = batch_df.toArrow()
    if table.num_rows == 0:
        return None
    table = table.take(pc.sort_indices(table, [("seq", "ascending"), ("idx", "ascending")]))
    is_out = pc.equal(table.column("kind"), "out")
    with gc_pause.paused():  # the rows are acyclic (``gc_pause``)
        others = table.filter(pc.invert(is_out)).to_pylist()
        for row in others:
            if row["data"] is not None:
                row["data"] = jf.decode_data(row["data"])
    return table.filter(is_out), others


def collect_encoded(batch_df: Any, _batch_id: int) -> EncodedBatch:
    """Sort the batch by ``(seq, idx)`` in Arrow and keep the ``out`` lines as text (no decode)."""
    parts = _sorted_parts(batch_df)
    if parts is None:
        return EncodedBatch([], [])
    return EncodedBatch(parts[0].column("data").to_pylist(), parts[1])  # strs: nothing for the collector


def collect_tuples(encoded: bool) -> Callable[[Any, int], TupleBatch]:
    """``collect`` for ``QuerySpec.out_rows`` ``tuples`` (``encoded`` False) or ``texts``: the batch sorted
    in Arrow, its ``out`` rows as ``(ts, data)`` pairs read from two columns — ``data`` decoded, or left
    as its tagged JSON text for a journal —, not a dict of every column per row decoded and sorted in
    Python (``query._collect``)."""
    def collect(batch_df: Any, _batch_id: int) -> TupleBatch:
        parts = _sorted_parts(batch_df)
        if parts is None:
            return TupleBatch([], [], encoded)
        outs, others = parts
        with gc_pause.paused():  # the batch's maps are acyclic: ~2 µs a row otherwise (``gc_pause``)
            stamps, texts = outs.column("ts").to_pylist(), outs.column("data").to_pylist()
            return pairs_batch(stamps, texts, others, encoded, shared=False)  # through Arrow: each its own

    return collect


def collector(spec: QuerySpec) -> Callable[[Any, int], Any]:
    """How a micro-batch of the chain's output rows reaches ``spec.on_batch`` (see ``QuerySpec``)."""
    if spec.out_format == "json":
        return collect_encoded
    if spec.out_rows == "dicts":
        return _collect
    return collect_tuples(spec.out_rows == "texts")
