"""Start a fused streaming query (journal → operator → foreachBatch) and wrap it in a ``QueryHandle``.

Usage (driver side)::

    spec = QuerySpec(query_id="t1.out", journal_dir=jdir, inputs=("src",),
                     stages=[StageSpec("s", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES]", ("src",))],
                     checkpoint_dir=ck, on_batch=handle_rows, on_error=report)
    handle = start_query(spark, spec)
    ...
    handle.stop()

``on_batch(batch_id, rows)`` runs on the driver (a foreachBatch callback) with the operator's rows as
dicts (``kind node seq idx ts data error input event``; ``data`` decoded) sorted by (seq, idx). If it
raises, the query fails. A failed query is reported once through ``on_error(error_text)`` (from a
StreamingQueryListener) and ``handle.error``.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import journal_format as jf
from . import routed_source
from .journal_source import NAME as SOURCE_NAME
from .journal_source import count_range_rows
from .journal_source import register as register_source
from .keyed_plan import plan_keyed
from .operator import OUTPUT_SCHEMA, STATE_SCHEMA, StageSpec
from .state_function import logged_processor, state_function
from .state_log import LOGGED, pin_layout, wanted_layout
from .tick_interval import tick_interval_ms

log = logging.getLogger("sbpy.spark")

_NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


@dataclass
class QuerySpec:
    """Everything needed to start one fused query.

    ``start_seq``: read journal entries with seq > start_seq; pinned in the checkpoint at the first start
    (``journal_format.pin_start_seq``), so a restart replays batch 0 over the same range.
    ``pool``: the FAIR scheduler pool (default: ``topology`` or the query id).
    ``trigger_ms``: micro-batch interval (None = next batch as soon as the previous one ends).
    ``max_seqs``: cap on seqs per micro-batch (0 = all available).
    ``shuffle_partitions``: state partitions of a *new* checkpoint (None = the session's setting; a
    restarted query keeps the count recorded in its checkpoint).
    ``tick_ms``: a query whose stages need wall-clock ticks (EMIT PERIODIC; None = ask the stages,
    ``tick_interval.tick_interval_ms``) runs with a processing-time group timeout, no-data micro-batches
    enabled (for this query only) and a trigger of at most ``tick_ms``; 0 or no ticking stage: none of it.
    """

    query_id: str
    journal_dir: str | Path
    inputs: tuple[str, ...]
    stages: list[StageSpec]
    checkpoint_dir: str | Path
    start_seq: int = 0
    on_batch: Callable[[int, list[dict[str, Any]]], None] | None = None
    before_batch: Callable[[int], None] | None = None  # called first in the callback; raising refuses the batch
    on_error: Callable[[str], None] | None = None
    topology: str = ""
    pool: str | None = None
    trigger_ms: int | None = None
    max_seqs: int = 0
    name: str | None = None
    shuffle_partitions: int | None = 1  # the operator has one group: one state-store partition
    keyed_partitions: int | None = None  # keyed MATCH_RECOGNIZE plans: state partitions (None = session's)
    tick_ms: int | None = None  # wall-clock ticks: trigger interval; None = from the stages, 0 = none
    initial_state: bytes | None = None  # a pipeline snapshot handed over by re-planning (``handoff.py``)
    plan: Any = None  # the ``sbpy.bql.plan.QueryPlan`` it was compiled from (None: stages as given)
    out_format: str = "tagged"  # "json": a stateless or driver query encodes ``out`` rows as the sink's JSON lines
    # how a driver or stateless query hands its rows to ``on_batch`` (not a JSON sink's): "dicts" (a dict per
    # row), "tuples" (``batch_rows.TupleBatch``: ``out`` rows as (ts, map)), "texts" (the same, maps as
    # tagged JSON)
    out_rows: str = "dicts"


class QueryHandle:
    """Our handle on a running ``StreamingQuery`` (camelCase stays behind this class)."""

    def __init__(self, spec: QuerySpec, query: Any):
        self.spec = spec
        self._query = query
        self.id: str = str(query.id)
        self.name: str = query.name or spec.query_id
        self._error: str | None = None
        self._reported = False
        self._lock = threading.Lock()
        self.batches = 0
        self.tier = ""  # the tier its starter ran, when one was chosen at start (``native-jvm``)
        self.reads_ranges = False  # its source sends seq ranges: progress counts journal seqs

    @property
    def is_active(self) -> bool:
        try:
            return bool(self._query.isActive)
        except Exception:
            return False

    @property
    def error(self) -> str | None:
        """The exception text if the query failed, else None."""
        if self._error is None and not self.is_active:
            try:
                exc = self._query.exception()
            except Exception:
                exc = None
            if exc is not None:
                self._error = _exception_text(exc)
        return self._error

    @property
    def last_progress(self) -> dict[str, Any] | None:
        try:
            progress = self._query.lastProgress
        except Exception:
            return None
        return count_range_rows(progress) if self.reads_ranges else progress

    @property
    def recent_progress(self) -> list[dict[str, Any]]:
        """Spark's recent progress reports, their rows counted as ``last_progress`` counts them."""
        try:
            progress = list(self._query.recentProgress)
        except Exception:
            return []
        return [count_range_rows(p) for p in progress] if self.reads_ranges else progress

    @property
    def status(self) -> dict[str, Any] | None:
        try:
            return self._query.status
        except Exception:
            return None

    def process_all_available(self) -> None:
        """Block until everything up to the journal HEAD is processed (tests; raises if it failed)."""
        self._query.processAllAvailable()

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait for the query to stop; True if it did (raises the query's exception if it failed)."""
        return bool(self._query.awaitTermination(timeout))

    def stop(self) -> None:
        """Stop the query (idempotent; waits for the running batch)."""
        try:
            self._query.stop()
        finally:
            _unregister(self)

    def _terminated(self, error: str | None) -> None:
        with self._lock:
            if error and self._error is None:
                self._error = error
            if not error or self._reported:
                return
            self._reported = True
        _unregister(self)
        if self.spec.on_error is not None:  # first: a failing log handler must not lose the report
            try:
                self.spec.on_error(error)
            except Exception:
                log.exception("on_error of query %s failed", self.name)
        log.error("query %s failed: %s", self.name, error)

    def __repr__(self) -> str:
        return f"QueryHandle({self.name!r}, active={self.is_active})"


def _exception_text(exc: Any) -> str:
    desc = getattr(exc, "desc", None) or getattr(exc, "getMessage", lambda: None)() or str(exc)
    return str(desc)


# ---------------------------------------------------------------- failure listener

_HANDLES: dict[str, QueryHandle] = {}
_PENDING: dict[str, str | None] = {}  # terminated before the handle was registered
_REG_LOCK = threading.Lock()
_START_LOCK = threading.Lock()


def _unregister(handle: QueryHandle) -> None:
    with _REG_LOCK:
        if _HANDLES.get(handle.id) is handle:
            del _HANDLES[handle.id]


def _on_terminated(query_id: str, error: str | None) -> None:
    with _REG_LOCK:
        handle = _HANDLES.get(query_id)
        if handle is None:
            _PENDING[query_id] = error
            if len(_PENDING) > 1000:
                _PENDING.pop(next(iter(_PENDING)))
            return
    handle._terminated(error)


class _TerminationsOnly:
    """The Py4J side of the session's query listener: only a query's end is read (its id and error)."""

    def onQueryStarted(self, jevent: Any) -> None:
        pass

    def onQueryProgress(self, jevent: Any) -> None:
        pass

    def onQueryIdle(self, jevent: Any) -> None:
        pass

    def onQueryTerminated(self, jevent: Any) -> None:
        error = jevent.exception()
        _on_terminated(jevent.id().toString(), error.get() if error.isDefined() else None)

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def _ensure_listener(spark: Any) -> None:
    if getattr(spark, "_sbpy_listener", None) is not None:
        return
    from pyspark.sql.streaming import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        """Registered as PySpark registers any listener, but the JVM-side wrapper calls
        ``_TerminationsOnly``: PySpark's own would build a Python event of every progress report (with
        py4j reflection that searched the class path: ~10 % of a B1 batch's JVM CPU)."""

        @property
        def _jlistener(self) -> Any:  # read by ``addListener``/``removeListener``
            if self._wrapper is None:
                from pyspark import SparkContext

                jvm = SparkContext._jvm
                self._wrapper = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(
                    _TerminationsOnly())
            return self._wrapper

        _wrapper: Any = None

        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            pass

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    listener = _Listener()
    spark.streams.addListener(listener)
    spark._sbpy_listener = listener
    register_source(spark)


# ---------------------------------------------------------------- starting


def _collect(batch_df: Any, _batch_id: int) -> list[dict[str, Any]]:
    try:
        rows = batch_df.toArrow().to_pylist()
    except AttributeError:
        rows = [r.asDict() for r in batch_df.collect()]
    rows.sort(key=lambda r: (r["seq"], r["idx"], r.get("sub") or 0))  # keyed plans add ``sub``
    for row in rows:
        if row["data"] is not None:
            row["data"] = jf.decode_data(row["data"])
    return rows


def start_query(spark: Any, spec: QuerySpec) -> QueryHandle:
    """Start the fused query described by ``spec`` and return its handle."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    _ensure_listener(spark)
    tick_ms = spec.tick_ms if spec.tick_ms is not None else tick_interval_ms(spec.stages, spec.topology)
    # MATCH_RECOGNIZE keyed by its PARTITION BY (bql/spark/keyed_query.py) unless a stage needs ticks
    planned = spec.plan.execution.value if spec.plan is not None else None
    keyed = None if tick_ms or planned not in (None, "keyed") else plan_keyed(spec.stages, spec.inputs)
    checkpoint, partitions = Path(spec.checkpoint_dir), spec.shuffle_partitions
    if keyed is not None:  # another plan: its own checkpoint layout inside the consumer's folder
        from . import keyed_query

        checkpoint = checkpoint / keyed_query.CHECKPOINT_SUBDIR
        partitions = keyed_query.bucket_count(spark, checkpoint, spec.keyed_partitions)  # one per bucket
    start_seq = jf.pin_start_seq(checkpoint, spec.start_seq)
    holds_tuples = spec.plan.holds_tuples if spec.plan is not None else None
    layout = pin_layout(checkpoint, wanted_layout(bool(tick_ms), holds_tuples)) if keyed is None else None
    # the snapshot layout's one group reads a large batch's journal entries itself (the source sends its
    # seq range); the logged layout measured slower per small batch with the option on (README Session 13)
    journal = None if keyed is not None or layout == LOGGED else (str(spec.journal_dir), tuple(spec.inputs))
    if keyed is not None:  # its journal reads route or pack the rows (``routed_source``)
        keyed_option = routed_source.encode_keyed(spec.query_id, keyed, spec.topology, partitions)
        source = routed_reader(spark, spec, start_seq, keyed_query.source_mode(keyed), keyed_option)
    else:
        source = journal_reader(spark, spec, start_seq, ranges=journal is not None)
    if layout == LOGGED and tick_ms:
        raise ValueError(f"checkpoint {checkpoint} has the logged state layout, which runs no wall-clock ticks")
    if layout == LOGGED:  # state_log: a base snapshot, the rows since, a stamp
        proc = logged_processor(spec.query_id, spec.stages, spec.topology, initial=spec.initial_state,
                                journal=journal)
        out = (source.withColumn("k", F.lit(0)).groupBy("k")
               .transformWithStateInPandas(proc, OUTPUT_SCHEMA, "Append", "None"))
    elif keyed is None:  # the snapshot layout: the pipeline's snapshot written every batch
        fn = state_function(spec.query_id, spec.stages, spec.topology, ticks=bool(tick_ms),
                            initial=spec.initial_state, journal=journal)
        timeout = GroupStateTimeout.ProcessingTimeTimeout if tick_ms else GroupStateTimeout.NoTimeout
        out = (source.withColumn("k", F.lit(0)).groupBy("k")
               .applyInPandasWithState(fn, OUTPUT_SCHEMA, STATE_SCHEMA, "Append", timeout))
    else:
        out = keyed_query.build(source, spec.query_id, keyed, spec.topology, partitions)
    handle = start_writer(spark, spec, out, checkpoint, partitions, tick_ms, _collect)
    handle.reads_ranges = journal is not None or keyed is not None  # progress counts journal seqs
    return handle


def journal_reader(spark: Any, spec: QuerySpec, start_seq: int, partitions: int = 1,
                   ranges: bool = False) -> Any:
    """The ``sbpy_journal`` stream of ``spec``'s inputs from ``start_seq`` (``partitions``: how many
    pieces a large micro-batch is read in; ``ranges``: one row per micro-batch naming its seq range)."""
    return _reader(spark, SOURCE_NAME, spec, start_seq, partitions, ranges).load()


def routed_reader(spark: Any, spec: QuerySpec, start_seq: int, mode: str, keyed: str) -> Any:
    """The ``sbpy_routed`` stream of ``spec``'s inputs (``journal_reader``'s offsets and partitions) in
    ``mode`` for the keyed plan encoded in ``keyed`` (``routed_source.encode_keyed``)."""
    routed_source.register(spark)
    return _reader(spark, routed_source.NAME, spec, start_seq).option("mode", mode).option("keyed", keyed).load()


def _reader(spark: Any, source: str, spec: QuerySpec, start_seq: int, partitions: int = 1,
            ranges: bool = False) -> Any:
    reader = (spark.readStream.format(source)
              .option("dir", str(spec.journal_dir))
              .option("inputs", ",".join(spec.inputs))
              .option("start_seq", str(start_seq)))
    if partitions > 1:
        reader = reader.option("partitions", str(int(partitions)))
    if ranges:
        reader = reader.option("ranges", "1")
    if spec.max_seqs:
        reader = reader.option("max_seqs", str(int(spec.max_seqs)))
    return reader


def start_writer(spark: Any, spec: QuerySpec, out: Any, checkpoint: Path, partitions: int | None,
                 tick_ms: int, collect: Callable[[Any, int], Any]) -> QueryHandle:
    """Start ``out`` (the query's output rows) into ``foreachBatch``: ``collect(batch_df, batch_id)``
    turns a micro-batch into ``on_batch`` rows on the driver. ``partitions``: shuffle partitions of a new
    checkpoint."""
    holder: dict[str, QueryHandle] = {}

    def bridge(batch_df: Any, batch_id: int) -> None:
        if spec.before_batch is not None:
            spec.before_batch(batch_id)
        rows = collect(batch_df, batch_id)
        handle = holder.get("h")
        if handle is not None:
            handle.batches += 1
        if spec.on_batch is not None:
            spec.on_batch(batch_id, rows)

    writer = (out.writeStream.queryName(spec.name or spec.query_id)
              .option("checkpointLocation", str(checkpoint))
              .foreachBatch(bridge))
    trigger_ms = min(spec.trigger_ms or tick_ms, tick_ms) if tick_ms else spec.trigger_ms
    if trigger_ms:
        writer = writer.trigger(processingTime=f"{int(trigger_ms)} milliseconds")
    sc = spark.sparkContext
    with _START_LOCK:
        previous = spark.conf.get("spark.sql.shuffle.partitions")
        no_data = spark.conf.get(_NO_DATA_BATCHES, None)
        if partitions:
            spark.conf.set("spark.sql.shuffle.partitions", str(int(partitions)))
        if tick_ms:  # timeouts are only checked in a micro-batch: run them without data too
            spark.conf.set(_NO_DATA_BATCHES, "true")
        sc.setLocalProperty("spark.scheduler.pool", spec.pool or spec.topology or spec.query_id)
        try:
            query = writer.start()  # the query clones the session conf here
        finally:
            sc.setLocalProperty("spark.scheduler.pool", None)
            spark.conf.set("spark.sql.shuffle.partitions", previous)
            if tick_ms:
                if no_data is None:
                    spark.conf.unset(_NO_DATA_BATCHES)
                else:
                    spark.conf.set(_NO_DATA_BATCHES, no_data)
    handle = register(spec, query)
    holder["h"] = handle
    return handle


def register(spec: QuerySpec, query: Any) -> QueryHandle:
    """Wrap a started ``StreamingQuery`` in a handle the failure listener reports to (also a failure
    that happened between ``start()`` and now)."""
    handle = QueryHandle(spec, query)
    with _REG_LOCK:
        _HANDLES[handle.id] = handle
        pending = _PENDING.pop(handle.id, "<none>")
        _start_watcher()
    if pending != "<none>":
        handle._terminated(pending)
    return handle


# ---------------------------------------------------------------- watcher (a lost listener event)

_WATCH_PERIOD_S = 2.0
_watcher: threading.Thread | None = None


def _start_watcher() -> None:
    """Start the watcher unless it runs (caller holds ``_REG_LOCK``).

    The listener's ``onQueryTerminated`` is a py4j callback: when the callback connection breaks
    ("Received empty command") the event is lost and a failed query would never be reported. The
    watcher asks every registered query whether it still runs and reports one that ended, with its
    exception; ``_terminated`` reports once, so a query the listener already reported is not
    reported again. It ends when no query is registered."""
    global _watcher
    if _watcher is None or not _watcher.is_alive():
        _watcher = threading.Thread(target=_watch, name="sbpy-query-watcher", daemon=True)
        _watcher.start()


def _watch() -> None:
    global _watcher
    wake = threading.Event()
    while True:
        wake.wait(_WATCH_PERIOD_S)
        with _REG_LOCK:
            handles = list(_HANDLES.values())
            if not handles:
                _watcher = None
                return
        for handle in handles:
            try:
                if not handle.is_active:
                    _unregister(handle)
                    handle._terminated(handle.error)
            except Exception:  # noqa: BLE001 - the watcher outlives one handle's failing report
                continue
