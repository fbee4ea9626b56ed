"""The fused operator's ``applyInPandasWithState`` function: a warm ``Pipeline`` per worker process,
restored from Spark's state when it differs, run over each micro-batch's journal rows in ``seq`` order,
its snapshot written back to the state; with wall-clock ticks, the group's processing-time timeout wakes
it at the stages' next tick (``operator`` describes the pipeline and its output rows).
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterator
from typing import Any

from . import journal_format as jf
from .operator import JOURNAL_COLUMNS, OUTPUT_COLUMNS, Pipeline, StageSpec

# ---------------------------------------------------------------- the Spark side (runs in workers)

# Per worker process: (query id, stage keys) -> Pipeline. Spark reuses Python workers, so a warm
# pipeline is kept between micro-batches and only restored when Spark's state differs from it.
_PIPELINES: dict[tuple, Pipeline] = {}


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
                   initial: bytes | None = None) -> Callable:
    """The ``applyInPandasWithState`` function of a fused pipeline (picklable closure).

    ``ticks``: the query runs with ``GroupStateTimeout.ProcessingTimeTimeout`` (see
    ``tick_interval_ms``). Every call, with data or because the group timed out, then ticks the stages
    due at the batch's processing time (``Pipeline.tick``; its rows follow the batch's) and sets the
    group's timeout to the earliest ``next_tick`` of the stages. The batch's processing time is
    recorded in Spark's offset log, so a replayed batch ticks exactly as the first attempt did.
    """
    stages = list(stages)
    cache_key = (query_id, tuple(s.key() for s in stages))

    def run_batch(key: Any, frames: Iterator[Any], state: Any) -> Iterator[Any]:
        import pandas as pd

        parts = [f for f in frames if len(f)]
        pdf = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True) if parts else None
        snap = bytes(state.get[0]) if state.exists and state.get[0] is not None else None
        pipeline = _pipeline(cache_key, stages, topology, snap, initial)
        rows: list[tuple] = []
        if pdf is not None:
            pdf = pdf.sort_values("seq", kind="stable")
            pipeline.dirty = True  # ahead of Spark's state until the new snapshot is saved
            try:
                rows = pipeline.run(zip(*(pdf[c].tolist() for c in JOURNAL_COLUMNS if c in pdf.columns)))
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
        yield pd.DataFrame.from_records(rows, columns=OUTPUT_COLUMNS) if rows else \
            pd.DataFrame({c: pd.Series(dtype="int64" if c in ("seq", "idx", "ts") else "object")
                          for c in OUTPUT_COLUMNS})

    return run_batch
