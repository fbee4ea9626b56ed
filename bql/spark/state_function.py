"""The fused operator's Spark functions, one per state layout (``state_log``), both running a warm
``Pipeline`` per worker process over each micro-batch's journal rows in ``seq`` order
(``operator`` describes the pipeline and its output rows):

- ``state_function``, the snapshot layout (``applyInPandasWithState``): the pipeline restored from
  Spark's state when it differs, its snapshot written back every batch; with wall-clock ticks, the
  group's processing-time timeout wakes it at the stages' next tick;
- ``logged_processor``, the logged layout (``transformWithStateInPandas``): a base snapshot, the journal
  rows applied since and a stamp (``state_log.LoggedPipeline``); a batch writes ∝ its rows.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterator
from operator import itemgetter
from typing import Any

from . import journal_format as jf
from .journal_source import expand_ranges
from .operator import JOURNAL_COLUMNS, OUTPUT_COLUMNS, Pipeline, StageSpec
from .state_log import (
    BASE_SCHEMA, LOG_SCHEMA, META_SCHEMA, LoggedPipeline, Meta, materialized_snapshot, replayable,
)

# ---------------------------------------------------------------- the Spark side (runs in workers)

# Per worker process: (query id, stage keys) -> Pipeline. Spark reuses Python workers, so a warm
# pipeline is kept between micro-batches and only restored when Spark's state differs from it.
_PIPELINES: dict[tuple, Pipeline] = {}
_LOGGED: dict[tuple, LoggedPipeline] = {}  # the same for the logged layout


def _forget(cache_key: tuple) -> None:
    """Drop a worker's warm pipeline. A module-level function on purpose: ``run_batch`` is pickled by
    value with copies of the globals it names, so it must not touch ``_PIPELINES`` itself."""
    _PIPELINES.pop(cache_key, None)


def _pipeline(cache_key: tuple, stages: list[StageSpec], topology: str, snap: bytes | None,
              initial: bytes | None = None) -> Pipeline:
    """The worker's warm pipeline in the state ``snap`` (Spark's; None = the query's first batch, which
    starts from ``initial``, a state handed over by re-planning, or from scratch)."""
    pipeline = _PIPELINES.get(cache_key)
    target = snap if snap is not None else initial
    if pipeline is None or pipeline.dirty or (target is None and pipeline.saved is not None):
        pipeline = _PIPELINES[cache_key] = Pipeline(stages, topology)
    if target is not None and target != pipeline.saved:
        try:
            pipeline.restore(target)
        except BaseException:
            _PIPELINES.pop(cache_key, None)
            raise
    return pipeline


def _timeout_ms(due: _dt.datetime, now_ms: int) -> int:
    """The ``setTimeoutDuration`` that fires in the first batch whose processing time is ``>= due``
    (Spark times a group out when its timeout timestamp is *before* the batch's timestamp)."""
    due_ms = -(-jf.ts_to_us(due) // 1000)
    return max(1, due_ms - 1 - now_ms)


def state_function(query_id: str, stages: list[StageSpec], topology: str = "", ticks: bool = False,
                   initial: bytes | None = None, journal: Journal | None = None) -> Callable:
    """The ``applyInPandasWithState`` function of a fused pipeline (picklable closure).

    ``ticks``: the query runs with ``GroupStateTimeout.ProcessingTimeTimeout`` (see
    ``tick_interval_ms``). Every call, with data or because the group timed out, then ticks the stages
    due at the batch's processing time (``Pipeline.tick``; its rows follow the batch's) and sets the
    group's timeout to the earliest ``next_tick`` of the stages. The batch's processing time is
    recorded in Spark's offset log, so a replayed batch ticks exactly as the first attempt did.
    ``journal``: ``(journal folder, inputs)`` when the source sends seq ranges (``journal_rows``).
    """
    stages = list(stages)
    cache_key = (query_id, tuple(s.key() for s in stages))

    def run_batch(key: Any, frames: Iterator[Any], state: Any) -> Iterator[Any]:
        rows_in = journal_rows(frames, journal)
        snap = bytes(state.get[0]) if state.exists and state.get[0] is not None else None
        pipeline = _pipeline(cache_key, stages, topology, snap, initial)
        rows: list[tuple] = []
        if rows_in:
            pipeline.dirty = True  # ahead of Spark's state until the new snapshot is saved
            try:
                rows = pipeline.run(rows_in)
            except BaseException:
                _forget(cache_key)  # half-applied: rebuild from Spark's state on retry
                raise
        if ticks:
            now_ms = int(state.getCurrentProcessingTimeMs())
            pipeline.dirty = True
            try:
                more = pipeline.tick(jf.us_to_ts(now_ms * 1000))
            except BaseException:
                _forget(cache_key)
                raise
            base = len(rows)
            rows = rows + [r[:3] + (base + r[3],) + r[4:] for r in more]
        new = pipeline.snapshot()
        state.update((new,))
        pipeline.saved, pipeline.dirty = new, False
        if ticks:
            due = pipeline.next_tick()
            if due is not None:
                state.setTimeoutDuration(_timeout_ms(due, now_ms))
        yield _output_frame(rows)

    return run_batch


def journal_rows(frames: Iterator[Any], journal: Journal | None = None) -> list[tuple]:
    """The journal rows of a group's pandas frames as ``JOURNAL_COLUMNS`` tuples (those present), in
    ``seq`` order (each frame's columns listed, no ``pd.concat``: its NA checks of object columns cost
    more than the rows' own decoding). With ``journal`` = ``(folder, inputs)`` the frames may hold seq
    ranges instead (the source's ``ranges`` option), read here."""
    rows: list[tuple] = []
    for frame in frames:
        if len(frame):
            rows.extend(zip(*(frame[c].tolist() for c in JOURNAL_COLUMNS if c in frame.columns)))
    rows.sort(key=_seq)
    if journal is not None:
        rows = expand_ranges(rows, journal[0], journal[1])
    return rows


_seq = itemgetter(0)
Journal = tuple[str, tuple[str, ...]]  # (journal folder, inputs) of a source sending seq ranges


def _output_frame(rows: list[tuple]) -> Any:
    import pandas as pd

    if rows:
        return pd.DataFrame.from_records(rows, columns=OUTPUT_COLUMNS)
    return pd.DataFrame({c: pd.Series(dtype="int64" if c in ("seq", "idx", "ts") else "object")
                         for c in OUTPUT_COLUMNS})


# ---------------------------------------------------------------- the logged layout


class SparkLogStore:
    """``state_log.LogStore`` over the processor's state variables (``base`` and ``meta`` ValueStates,
    ``log`` a ListState)."""

    def __init__(self, base: Any, log: Any):
        self._base, self._log = base, log

    def base(self) -> bytes | None:
        value = self._base.get() if self._base.exists() else None
        return bytes(value[0]) if value is not None and value[0] is not None else None

    def log(self) -> list[tuple[int, bytes]]:
        return [(int(v[0]), bytes(v[1])) for v in self._log.get()] if self._log.exists() else []

    def write_base(self, snap: bytes) -> None:
        self._base.update((snap,))

    def clear_log(self) -> None:
        self._log.clear()

    def append(self, n: int, rows: bytes) -> None:
        self._log.appendValue((n, rows))


def read_meta(state: Any) -> Meta | None:
    value = state.get() if state.exists() else None
    if value is None or value[0] is None:
        return None
    return Meta(bytes(value[0]), int(value[1]), int(value[2]), int(value[3]))


def _run_logged(cache_key: tuple, stages: list[StageSpec], topology: str, initial: bytes | None,
                frames: Iterator[Any], meta_state: Any, store: SparkLogStore, journal: Journal | None = None) -> Any:
    """One micro-batch of the logged layout (module level: it reaches the per-worker cache)."""
    rows = journal_rows(frames, journal)
    worker = _LOGGED.get(cache_key)
    if worker is None:
        worker = _LOGGED[cache_key] = LoggedPipeline(lambda: Pipeline(stages, topology), initial,
                                                     replayable(stages))
    worker.initial = initial  # a query started again under the same id may be handed another state
    out, meta = worker.run(rows, read_meta(meta_state), store)
    if meta is not None:
        meta_state.update((meta.stamp, meta.entries, meta.log_bytes, meta.base_bytes))
    return _output_frame(out)


def logged_processor(query_id: str, stages: list[StageSpec], topology: str = "",
                     initial: bytes | None = None, journal: Journal | None = None) -> Any:
    """The ``transformWithStateInPandas`` processor of a fused pipeline in the logged layout (no
    wall-clock ticks: those queries keep the snapshot layout). Built here (pyspark imported lazily) and
    pickled by value; the per-worker cache is reached through the module-level ``_run_logged``."""
    from pyspark.sql.streaming import StatefulProcessor

    stages = list(stages)
    cache_key = ("logged", query_id, tuple(s.key() for s in stages))

    class _Logged(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.meta = handle.getValueState("meta", META_SCHEMA)
            self.store = SparkLogStore(handle.getValueState("base", BASE_SCHEMA),
                                       handle.getListState("log", LOG_SCHEMA))

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            yield _run_logged(cache_key, stages, topology, initial, rows, self.meta, self.store, journal)

        def close(self) -> None:
            pass

    return _Logged()


def read_logged_snapshot(spark: Any, checkpoint: str, batch_id: int, stages: list[StageSpec],
                         topology: str = "") -> bytes | None:
    """The pipeline snapshot after batch ``batch_id`` of a logged-layout query (``handoff``): its base
    and log read with Spark's state data source, the log replayed over the base."""
    def rows(var: str) -> list[Any]:
        return (spark.read.format("statestore").option("batchId", int(batch_id)).option("stateVarName", var)
                .load(str(checkpoint)).collect())

    if not rows("meta"):
        return None
    bases = [bytes(r["value"]["snap"]) for r in rows("base") if r["value"]["snap"] is not None]
    log = [(int(r["list_element"]["n"]), bytes(r["list_element"]["rows"])) for r in rows("log")]
    return materialized_snapshot(list(stages), topology, bases[0] if bases else None, log)
