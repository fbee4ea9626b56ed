"""The native execution of a stateless chain: Spark column expressions over raw lines, the kernel for the rest.

::

    sbpy_native (journal in seq-range partitions: one descriptor row per file segment block, or its raw
    │            lines; other rows through the Python chain)
      └─ descriptor → sbpy_file_lines (JVM) → posexplode: line rows (seq = first + pos)   (expand_lines)
      └─ line rows → sbpy_json_fields (JVM) → guard / depth / data columns (native_stage) → foreachBatch

The reader sends descriptors (``lines=jvm``) when the session knows ``sbpy_file_lines``
(``native_udf.file_lines_registered``), else the lines themselves as Arrow strings (``lines=arrow``);
both give the same ``line`` rows, so everything after ``expand_lines`` is one code path.

Each ``line`` row becomes ``out`` (passed every stage: ``data`` is the output line), ``skip`` (a WHERE
was false; ``depth`` says how many stages it passed; a line no stage passed is dropped in the JVM) or
``fb`` (the guard refused it: ``data`` is the raw line). On the driver (``NativeCollector``) the ``fb`` lines are parsed exactly as the file source's
reader parses them (``journal_segments.parse_line``) and run through the same chain pipeline the
Python tiers run — its outputs, drops and errors are the kernel's — then merged with the native rows by
``(seq, idx)``, which restores arrival order. Stage counters: the native rows' from the lines read (the
reader's ``seg`` rows) less the refused ones and from ``depth``, the rest from the pipelines' ``stat``
rows; the consumer adds them up.
"""
from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import Any

from . import journal_format as jf
from . import journal_segments as js
from .native_source import DESCRIPTOR, LINES_OPTION
from .native_source import NAME as SOURCE_NAME
from .native_source import register as register_source
from .native_stage import NativeChain, compile_stages
from .operator import OUTPUT_COLUMNS, StageSpec
from .query import QueryHandle, QuerySpec, _ensure_listener, start_writer

LINES_ENV = "SBPY_NATIVE_LINES"  # "arrow": the reader ships the lines (the older mode) even with sbpy_file_lines


def chain_of(stages: list[StageSpec]) -> NativeChain:
    """The native chain of ``stages`` (``native_stage.Unsupported`` if any stage is not native)."""
    return compile_stages([(s.node, s.statement) for s in stages])


def expand_lines(df: Any) -> Any:
    """The source's rows with each ``lines`` descriptor replaced by its block's ``line`` rows, in order.

    ``sbpy_file_lines(path, spec)`` returns the block's lines (each with its newline, as the Arrow mode's
    split gives them; it throws when the file no longer holds the journaled bytes, failing the batch);
    ``posexplode`` numbers them: the k-th line has ``seq = first + k``, ``idx`` 0, the descriptor's ``ts``
    and ``input``. Every other row passes unchanged (exploded from a one-element array)."""
    from pyspark.sql import functions as F

    is_desc = F.col("kind") == F.lit(DESCRIPTOR)
    items = F.when(is_desc, F.call_function("sbpy_file_lines", F.col("data"), F.col("event"))) \
        .otherwise(F.array(F.col("data")))
    exploded = df.select(*[F.col(c) for c in OUTPUT_COLUMNS], F.posexplode(items).alias("_pos", "_line"))
    return exploded.select(
        F.when(is_desc, F.lit("line")).otherwise(F.col("kind")).alias("kind"), F.col("node"),
        F.when(is_desc, F.col("seq") + F.col("_pos")).otherwise(F.col("seq")).alias("seq"),
        F.col("idx"), F.col("ts"), F.col("_line").alias("data"), F.col("error"), F.col("input"),
        F.when(is_desc, F.lit(None)).otherwise(F.col("event")).alias("event"))


def classify(df: Any, chain: NativeChain) -> Any:
    """The source's rows with ``line`` rows classified (``out``/``skip``/``fb``) and a ``depth`` column."""
    from pyspark.sql import functions as F

    is_line = F.col("kind") == "line"
    # the JVM pass once per line, as a column of its own (see ``NativeChain.columns``)
    df = df.withColumn("_f", F.when(is_line, chain.fields(F.col("data"))))
    guard, depth, data = chain.columns(F.col("_f"))
    df = df.withColumn("_guard", F.when(is_line, guard)).withColumn("_depth", F.when(is_line, depth))
    ok = F.col("_guard").eqNullSafe(True)
    full = F.col("_depth") == F.lit(chain.stages)
    kind = F.when(~is_line, F.col("kind")).when(~ok, F.lit("fb")).when(full, F.lit("out")).otherwise(F.lit("skip"))
    out_data = F.when(~is_line, F.col("data")).when(~ok, F.col("data")).when(full, data)
    cols = [kind.alias("kind")] + [F.col(c) for c in OUTPUT_COLUMNS[1:5]] + [out_data.alias("data")] + \
        [F.col(c) for c in OUTPUT_COLUMNS[6:]] + [F.when(ok, F.col("_depth")).alias("depth")]
    # a line no stage passed never reaches the driver: the collector counts it from the reader's
    # ``seg`` rows (lines read) minus the refused ones
    return df.select(*cols).where(~((F.col("kind") == "skip") & (F.col("depth") == 0)))


class NativeCollector:
    """Turns a micro-batch into the consumer's rows: ``EncodedBatch`` (JSON sinks) or ``on_batch`` dicts."""

    def __init__(self, spec: QuerySpec):
        self.spec = spec
        self.nodes = [s.node for s in spec.stages]
        self.inputs = [s.inputs[0] for s in spec.stages]

    def __call__(self, batch_df: Any) -> Any:
        import pyarrow.compute as pc

        table = batch_df.toArrow()
        kind = table.column("kind")
        stats = self._native_stats(table)
        has_fb = table.num_rows and pc.any(pc.equal(kind, "fb")).as_py()
        if not has_fb and self.spec.out_format == "json":
            from .stateless_query import EncodedBatch

            outs = _in_order(table.filter(pc.equal(kind, "out")))  # partitions come in seq order: no sort
            others = _decoded(table.filter(pc.invert(pc.is_in(kind, value_set=_not_others())))
                              .select(OUTPUT_COLUMNS).to_pylist())
            others.sort(key=lambda r: (r["seq"], r["idx"]))
            return EncodedBatch(outs.column("data").to_pylist(), stats + others)
        if table.num_rows:
            table = table.take(pc.sort_indices(table, [("seq", "ascending"), ("idx", "ascending")]))
        rows = self._merged(table)
        if self.spec.out_format == "json":
            from .stateless_query import EncodedBatch

            lines = [r[5] for r in rows if r[0] == "out"]
            others = _decoded([dict(zip(OUTPUT_COLUMNS, r)) for r in rows if r[0] != "out"])
            return EncodedBatch(lines, stats + others)
        return stats + _decoded([dict(zip(OUTPUT_COLUMNS, r)) for r in rows])

    def _native_stats(self, table: Any) -> list[dict[str, Any]]:
        """``stat`` rows of the rows the native tier computed (``depth`` = stages passed)."""
        import pyarrow.compute as pc

        kind = table.column("kind")
        segs = table.filter(pc.equal(kind, "seg"))
        lines = sum(int(last) - first + 1 for first, last in
                    zip(segs.column("seq").to_pylist(), segs.column("event").to_pylist()))
        decided = lines - (pc.sum(pc.equal(kind, "fb")).as_py() or 0)  # every line the guards accepted
        if decided <= 0:
            return []
        depth = table.column("depth").drop_null()  # the rows that passed a stage (skipped at 0 are not sent)
        counts = [decided] + [pc.sum(pc.greater_equal(depth, k)).as_py() or 0 for k in range(1, len(self.nodes) + 1)]
        stats = []
        for k, node in enumerate(self.nodes):
            if counts[k]:
                data = {"received": {self.inputs[k]: counts[k]}, "sent": counts[k + 1], "dropped": 0}
                stats.append(dict(zip(OUTPUT_COLUMNS, ("stat", node, 0, 0, 0, data, None, None, None))))
        return stats

    def _merged(self, table: Any) -> list[tuple]:
        """Every row but ``skip``/``seg`` as ``OUTPUT_COLUMNS`` tuples in ``(seq, idx)`` order, the ``fb``
        lines replaced by what the chain's pipeline makes of them (on the driver)."""
        from .stateless_query import chain_pipeline, run_rows

        rows = table.select(OUTPUT_COLUMNS).to_pylist()
        segs = sorted((r["seq"], r["idx"], r["data"]) for r in rows if r["kind"] == "seg")
        firsts = [s[0] for s in segs]
        kept: list[tuple] = []
        journal_rows: list[tuple] = []
        for r in rows:
            k = r["kind"]
            if k == "fb":
                seg = segs[bisect.bisect_right(firsts, r["seq"]) - 1] if segs else (0, 0, "?")
                row = fallback_row(r["seq"], r["input"], r["ts"], r["data"], seg[2], seg[1])
                if row is not None:
                    journal_rows.append(row)
            elif k not in _QUIET:
                kept.append(tuple(r[c] for c in OUTPUT_COLUMNS))
        if journal_rows:
            spec = self.spec
            pipeline = chain_pipeline(spec.query_id + "/driver", spec.stages, spec.topology, spec.out_format)
            kept.extend(run_rows(pipeline, journal_rows))
            kept.sort(key=lambda r: (r[2], r[3]))
        return kept


_QUIET = ("skip", "seg")


def _in_order(table: Any) -> Any:
    """``table`` sorted by ``(seq, idx)``; as it is when its seqs already increase (the usual case)."""
    import pyarrow.compute as pc

    if table.num_rows < 2:
        return table
    seq = table.column("seq").combine_chunks()
    if pc.all(pc.greater(seq.slice(1), seq.slice(0, len(seq) - 1))).as_py():
        return table
    return table.take(pc.sort_indices(table, [("seq", "ascending"), ("idx", "ascending")]))


def _decoded(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``on_batch`` dicts with their tagged-JSON ``data`` decoded (as ``query._collect`` gives them)."""
    for row in rows:
        if row["data"] is not None:
            row["data"] = jf.decode_data(row["data"])
    return rows


def _not_others() -> Any:
    import pyarrow as pa

    return pa.array(["out", *_QUIET])


def fallback_row(seq: int, input_name: str, ts: int, line: str, path: str, line0: int) -> tuple | None:
    """The journal row of one refused line, as ``journal_segments.expand`` makes it (None: blank)."""
    raw = line.encode("utf-8").strip()
    if not raw:
        return None
    try:
        _value, text = js.parse_line(raw)
    except ValueError as e:
        return (seq, input_name, ts, None, False, f"file source: {path}:{line0 + seq}: {e}")
    return (seq, input_name, ts, text, False, None)


def lines_mode(spark: Any) -> str:
    """How the reader hands file lines over: ``"jvm"`` (descriptors for ``sbpy_file_lines``) when the
    session knows that function and ``SBPY_NATIVE_LINES`` is not ``arrow``, else ``"arrow"``."""
    from .native_udf import file_lines_registered

    if os.environ.get(LINES_ENV, "").strip().lower() == "arrow":
        return "arrow"
    return "jvm" if file_lines_registered(spark) else "arrow"


def start_native_query(spark: Any, spec: QuerySpec, chain: NativeChain | None = None,
                       lines: str | None = None) -> QueryHandle:
    """Start ``spec`` (a native chain over one journal input) — see the module docstring. ``lines``:
    the reader's mode (``"jvm"``/``"arrow"``; default ``lines_mode``)."""
    _ensure_listener(spark)
    register_source(spark)
    from .stateless_query import chain_reader

    chain = chain or chain_of(spec.stages)
    mode = lines or lines_mode(spark)
    checkpoint = Path(spec.checkpoint_dir)
    df = chain_reader(spark, spec, SOURCE_NAME, checkpoint).option(LINES_OPTION, mode).load()
    if mode == "jvm":
        df = expand_lines(df)
    handle = start_writer(spark, spec, classify(df, chain), checkpoint, None, 0, NativeCollector(spec))
    handle.tier = "native-jvm"
    return handle
