"""The native execution of a stateless chain: Spark column expressions over raw lines, the kernel for the rest.

::

    sbpy_native (journal in seq-range partitions: one descriptor row per file segment block, or its raw
    │            lines; other rows through the Python chain)
      └─ descriptor → sbpy_file_fields (JVM: split + JSON pass over the block's bytes) → posexplode:
                      line rows (seq = first + pos) with their fields                      (expand_lines)
      └─ line rows → guard / depth / data columns (native_stage) → foreachBatch
                      (a line that came as text: sbpy_json_fields first)

Three modes (``lines_mode``), each giving the same rows: ``fields`` (the default when the session knows
``sbpy_file_fields``) has the reader send descriptors and the JVM split each block and scan its lines'
UTF-8 bytes in one call, with no Java string per line; ``jvm`` (``SBPY_NATIVE_LINES=jvm``, or a jar
without ``FileFields``) splits blocks with ``sbpy_file_lines`` and scans each line with
``sbpy_json_fields``; ``arrow`` ships the lines themselves as Arrow strings.

Each ``line`` row becomes an output (it passed every stage: ``data`` is the output line), a skip (a
WHERE was false; ``depth`` says how many stages it passed; a line no stage passed is dropped in the
JVM) or a refusal (the guard refused it: ``data`` is the raw line). ``pack`` ships them to the driver
in three columns (``k``, ``seq``, ``data``; every further column would cost the executor→driver
conversion once per row), where ``native_collect.NativeCollector`` runs the refused lines through the
chain's Python pipeline and merges everything in arrival order; ``classify`` is the same decision as
readable columns (``kind``/``depth``), for tests.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .native_collect import K_FB, K_OTHER, SKIP_BASE, NativeCollector
from .native_source import DESCRIPTOR, LINES_OPTION
from .native_source import NAME as SOURCE_NAME
from .native_source import register as register_source
from .native_stage import NativeChain, compile_stages
from .native_written import clear as clear_written
from .operator import OUTPUT_COLUMNS, StageSpec
from .query import QueryHandle, QuerySpec, _ensure_listener, start_writer

LINES_ENV = "SBPY_NATIVE_LINES"  # "arrow" / "jvm": an older mode even when the session has a newer one
MODES = ("fields", "jvm", "arrow")


def chain_of(stages: list[StageSpec]) -> NativeChain:
    """The native chain of ``stages`` (``native_stage.Unsupported`` if any stage is not native)."""
    return compile_stages([(s.node, s.statement) for s in stages])


def expand_lines(df: Any, keys: str | None = None) -> Any:
    """The source's rows with each ``lines`` descriptor replaced by its block's ``line`` rows, in order.

    ``sbpy_file_lines(path, spec)`` returns the block's lines (each with its newline, as the Arrow mode's
    split gives them; it throws when the file no longer holds the journaled bytes, failing the batch);
    ``posexplode`` numbers them: the k-th line has ``seq = first + k``, ``idx`` 0, the descriptor's ``ts``
    and ``input``. Every other row passes unchanged (exploded from a one-element array).

    With ``keys`` (a chain's ``key_spec``) the block goes through ``sbpy_file_fields`` instead, the same
    lines with their JSON pass done, and two more columns come along: ``_desc`` (the row is a block's line)
    and ``_ff`` (that line's fields from index 2, NULL when the pass refused it: see ``_decide``)."""
    from pyspark.sql import functions as F

    is_desc = F.col("kind") == F.lit(DESCRIPTOR)
    if keys is None:
        items = F.when(is_desc, F.call_function("sbpy_file_lines", F.col("data"), F.col("event"))) \
            .otherwise(F.array(F.col("data")))
    else:
        fields = F.call_function("sbpy_file_fields", F.col("data"), F.col("event"), F.lit(keys))
        items = F.when(is_desc, fields) \
            .otherwise(F.array(F.array(F.col("data"))))
    # what a line keeps of its descriptor is decided before the explode: every generated row copies the
    # columns it carries (the descriptor's path and spec would be copied once per line)
    kept = [F.when(is_desc, F.lit("line")).otherwise(F.col("kind")).alias("kind"),
            *[F.col(c) for c in ("node", "seq", "idx", "ts", "error", "input")],
            F.when(is_desc, F.lit(None)).otherwise(F.col("event")).alias("event"), is_desc.alias("_desc")]
    exploded = df.select(*kept, F.posexplode(items).alias("_pos", "_item"))
    desc = F.col("_desc")
    line = F.col("_item") if keys is None else F.col("_item")[0]
    extra = [] if keys is None else [desc, F.when(desc & (F.size("_item") > 1), F.col("_item")).alias("_ff")]
    return exploded.select(
        F.col("kind"), F.col("node"), F.when(desc, F.col("seq") + F.col("_pos")).otherwise(F.col("seq")).alias("seq"),
        F.col("idx"), F.col("ts"), line.alias("data"), F.col("error"), F.col("input"), F.col("event"), *extra)


def _decide(df: Any, chain: NativeChain) -> tuple[Any, dict[str, Any]]:
    """``df`` with the chain's columns over its ``line`` rows, and the conditions that classify a row."""
    from pyspark.sql import functions as F

    is_line = F.col("kind") == "line"
    # the JVM pass once per line, as a column of its own (see ``NativeChain.columns``)
    if "_ff" in df.columns:  # a block's lines come with it (``expand_lines``), fields from index 2
        scanned = F.concat(F.array(F.lit(None).cast("string"), F.lit("")), chain.fields(F.col("data")))
        df = df.withColumn("_f", F.when(is_line & F.col("_desc"), F.col("_ff")).when(is_line, scanned))
        base = 2
    else:
        df = df.withColumn("_f", F.when(is_line, chain.fields(F.col("data"))))
        base = 0
    guard, depth, data, pre = chain.columns(F.col("_f"), base)
    for name, column in pre:  # computed once per line, as ``_f`` (see ``NativeChain.columns``); NULL where
        df = df.withColumn(name, column)  # ``_f`` is (rows other than lines)
    df = df.withColumn("_guard", F.when(is_line, guard)).withColumn("_depth", F.when(is_line, depth))
    ok = F.col("_guard").eqNullSafe(True)
    full = F.col("_depth") == F.lit(chain.stages)
    # a line no stage passed never reaches the driver: it is counted from the reader's ``seg`` rows
    # (lines read) minus the refused ones
    df = df.where(~(is_line & ok & F.col("_depth").eqNullSafe(0)))
    return df, {"line": is_line, "ok": ok, "full": full, "data": data}


def classify(df: Any, chain: NativeChain) -> Any:
    """The source's rows with ``line`` rows classified (``out``/``skip``/``fb``) and a ``depth`` column
    (the readable form of ``pack``, for tests and inspection)."""
    from pyspark.sql import functions as F

    df, c = _decide(df, chain)
    is_line, ok, full = c["line"], c["ok"], c["full"]
    kind = F.when(~is_line, F.col("kind")).when(~ok, F.lit("fb")).when(full, F.lit("out")).otherwise(F.lit("skip"))
    out_data = F.when(~is_line, F.col("data")).when(~ok, F.col("data")).when(full, c["data"])
    cols = [kind.alias("kind")] + [F.col(c) for c in OUTPUT_COLUMNS[1:5]] + [out_data.alias("data")] + \
        [F.col(c) for c in OUTPUT_COLUMNS[6:]] + [F.when(ok, F.col("_depth")).alias("depth")]
    return df.select(*cols)


def pack(df: Any, chain: NativeChain) -> Any:
    """The classified rows in the three columns the driver receives (``native_collect``'s table; an
    output's ``data`` is its JSON line, without a newline)."""
    from pyspark.sql import functions as F

    df, c = _decide(df, chain)
    is_line, ok, full = c["line"], c["ok"], c["full"]
    k = F.when(~is_line, F.lit(K_OTHER)).when(~ok, F.lit(K_FB)).when(full, F.lit(None)) \
        .otherwise(F.lit(SKIP_BASE) + F.col("_depth"))
    skip = is_line & ok & ~full
    other = F.to_json(F.struct(*[F.col(name) for name in OUTPUT_COLUMNS]))
    data = F.when(~is_line, other).when(~ok, F.col("data")).when(full, c["data"])
    return df.select(k.cast("int").alias("k"), F.when(skip, F.lit(None)).otherwise(F.col("seq")).alias("seq"),
                     data.alias("data"))


def lines_mode(spark: Any) -> str:
    """How file lines reach the chain (module docstring): ``"fields"`` when the session knows
    ``sbpy_file_fields``, else ``"jvm"`` when it knows ``sbpy_file_lines``, else ``"arrow"``; never a
    newer mode than ``SBPY_NATIVE_LINES`` names."""
    from .native_udf import file_fields_registered, file_lines_registered

    wanted = os.environ.get(LINES_ENV, "").strip().lower()
    cap = MODES.index(wanted) if wanted in MODES else 0
    for mode, known in (("fields", file_fields_registered), ("jvm", file_lines_registered)):
        if MODES.index(mode) >= cap and known(spark):
            return mode
    return "arrow"


def start_native_query(spark: Any, spec: QuerySpec, chain: NativeChain | None = None,
                       lines: str | None = None) -> QueryHandle:
    """Start ``spec`` (a native chain over one journal input) — see the module docstring. ``lines``:
    how lines reach the chain (one of ``MODES``; default ``lines_mode``)."""
    _ensure_listener(spark)
    register_source(spark)
    from .stateless_query import chain_reader

    chain = chain or chain_of(spec.stages)
    mode = lines or lines_mode(spark)
    checkpoint = Path(spec.checkpoint_dir)
    reader = chain_reader(spark, spec, SOURCE_NAME, checkpoint)
    df = reader.option(LINES_OPTION, "arrow" if mode == "arrow" else "jvm").load()
    if mode != "arrow":
        df = expand_lines(df, chain.key_spec if mode == "fields" else None)
    out = pack(df, chain)
    if spec.out_format == "json":
        clear_written(checkpoint)  # what a stopped query left of a written batch
    handle = start_writer(spark, spec, out, checkpoint, None, 0, NativeCollector(spec))
    handle.tier = "native-jvm"
    return handle
