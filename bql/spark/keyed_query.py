"""The Spark side of a keyed MATCH_RECOGNIZE query: three chained stateful operators.

::

    sbpy_journal ─► mapInPandas(JournalRouter)                           no stage before K: stateless
                 │  or groupBy(0).transformWithStateInPandas(router)     one group: upstream stages, keys
                 ─► groupBy(key).applyInPandasWithState(keyed)           one group per PARTITION BY key
                 ─► groupBy(0).transformWithStateInPandas(tail)          only if stages follow K

Spark accepts one ``applyInPandasWithState`` per query but chains ``transformWithStateInPandas``
operators in Append mode without watermarks; the per-key operator is the ``applyInPandasWithState``
because it is the cheaper one per key group (docs/spark-facts). Each operator keeps its state as one
pickled snapshot per group (``snap binary``): the router's Pipeline + key list, the tail's Pipeline,
and per key that partition's matcher state. Warm cores are cached per Python worker and reused while
Spark's state equals what they saved (as ``state_function._pipeline`` does).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from .keyed_ops import ROW_COLUMNS, ROW_SCHEMA, JournalRouter, KeyedCore, RouterCore, TailCore
from .keyed_plan import PASS_KEY, KeyedPlan

STATE_SCHEMA = "snap binary"
CHECKPOINT_SUBDIR = "keyed-v2"  # inside the consumer's checkpoint folder: a different plan, its own layout
_INT_COLUMNS = ("seq", "idx", "sub", "ts")
_MAX_CACHED_KEYS = 4096

# Per worker process: warm cores and per-key partition states.
_CORES: dict[tuple, Any] = {}
_PARTS: dict[tuple, tuple[bytes, Any]] = {}


def _frame(rows: list[tuple]) -> Any:
    import pandas as pd

    if rows:
        return pd.DataFrame.from_records(rows, columns=ROW_COLUMNS)
    return pd.DataFrame({c: pd.Series(dtype="int64" if c in _INT_COLUMNS else "object") for c in ROW_COLUMNS})


def _concat(frames: Iterator[Any]) -> Any:
    import pandas as pd

    parts = [f for f in frames if len(f)]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def _core(cache_key: tuple, make: Callable[[], Any], snap: bytes | None) -> Any:
    """A warm core whose state equals ``snap`` (rebuilt/restored when it does not)."""
    core = _CORES.get(cache_key)
    if core is None or core.dirty or (snap is None and core.saved is not None):
        core = _CORES[cache_key] = make()
    if snap is not None and snap != core.saved:
        try:
            core.restore(snap)
        except BaseException:
            _CORES.pop(cache_key, None)
            raise
    return core


def _plan_key(plan: KeyedPlan) -> tuple:
    return (tuple(s.key() for s in plan.upstream), plan.keyed.key(), tuple(s.key() for s in plan.downstream))


def _run_sequential(role: str, cache_key: tuple, make: Callable[[], Any], state: Any, rows: Iterator[Any]) -> Any:
    """One micro-batch of a sequential core (router or tail) in its single group."""
    pdf = _concat(rows)
    value = state.get() if state.exists() else None
    snap = bytes(value[0]) if value is not None and value[0] is not None else None
    core = _core(cache_key, make, snap)
    out: list[tuple] = []
    if pdf is not None:
        core.dirty = True  # ahead of Spark's state until the new snapshot is saved
        try:
            out = _feed(role, core, pdf)
        except BaseException:
            _CORES.pop(cache_key, None)
            raise
    new = core.snapshot()
    state.update((new,))
    core.saved, core.dirty = new, False
    return _frame(out)


def _sequential(role: str, query_id: str, plan: KeyedPlan, topology: str, make: Callable[[], Any]) -> Any:
    """A ``StatefulProcessor`` running one sequential core (router or tail) in a single group.

    The class is built here (pyspark is imported lazily) and so pickled by value; everything that
    touches the per-worker caches is a module-level function, which pickles by reference (a by-value
    function would carry its own copy of ``_CORES`` and never find a warm core)."""
    from pyspark.sql.streaming import StatefulProcessor

    cache_key = (role, query_id, _plan_key(plan))

    class _Sequential(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.state = handle.getValueState("snap", STATE_SCHEMA)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            yield _run_sequential(role, cache_key, make, self.state, rows)

        def close(self) -> None:
            pass

    return _Sequential()


def _journal_rows(pdf: Any) -> Any:
    """Journal rows ``(seq, input, ts, data, end[, error])`` of a frame of the journal source."""
    return zip(*(pdf[c].tolist() for c in ("seq", "input", "ts", "data", "end", "error") if c in pdf.columns))


def _feed(role: str, core: Any, pdf: Any) -> list[tuple]:
    if role == "router":
        pdf = pdf.sort_values("seq", kind="stable")
        return core.run(_journal_rows(pdf))
    return core.run(list(pdf[ROW_COLUMNS].itertuples(index=False, name=None)))


def _run_key(cache_key: tuple, query_id: str, plan: KeyedPlan, topology: str, key: Any, frames: Iterator[Any],
             state: Any) -> Iterator[Any]:
    gkey = key[0]
    pdf = _concat(frames)
    if gkey == PASS_KEY or gkey is None:
        yield pdf[ROW_COLUMNS] if pdf is not None else _frame([])
        return
    snap = bytes(state.get[0]) if state.exists and state.get[0] is not None else None
    core = _CORES.get(cache_key)
    if core is None:
        core = _CORES[cache_key] = KeyedCore(plan, topology)
    pkey = (query_id, gkey)
    cached = _PARTS.pop(pkey, None)
    if cached is not None and snap is not None and cached[0] == snap:
        core.proc.parts = cached[1]  # warm: the partition objects Spark's state was saved from
    else:
        core.load(snap)
    out: list[tuple] = []
    if pdf is not None:
        pdf = pdf.sort_values(["seq", "idx"], kind="stable")
        out = core.run(list(zip(pdf["seq"].tolist(), pdf["idx"].tolist(), pdf["kind"].tolist(),
                                pdf["ts"].tolist(), pdf["data"].tolist(), pdf["input"].tolist())))
    new = core.snapshot()
    state.update((new,))
    _PARTS[pkey] = (new, core.proc.parts)
    core.proc.parts = {}
    while len(_PARTS) > _MAX_CACHED_KEYS:
        _PARTS.pop(next(iter(_PARTS)))
    yield _frame(out)


def keyed_function(query_id: str, plan: KeyedPlan, topology: str = "") -> Callable:
    """The ``applyInPandasWithState`` function running K for one partition key (a partial of a
    module-level function, so the worker's caches persist between micro-batches)."""
    return functools.partial(_run_key, ("keyed", query_id, _plan_key(plan)), query_id, plan, topology)


def _route_chunks(cache_key: tuple, plan: KeyedPlan, topology: str, journal_dir: str, start_seq: int,
                  frames: Iterator[Any]) -> Iterator[Any]:
    """The ``mapInPandas`` function of a plan without upstream stages (``JournalRouter``)."""
    core = _CORES.get(cache_key)
    if core is None:
        from . import journal_format as jf

        log = jf.node_log_path(journal_dir, plan.route)
        core = _CORES[cache_key] = JournalRouter(
            plan, topology, lambda end_seq: jf.read_log(log, plan.route, start_seq, end_seq - 1))
    for pdf in frames:
        if not len(pdf):
            continue
        pdf = pdf.sort_values("seq", kind="stable")
        yield _frame(core.run(_journal_rows(pdf)))


def build(reader: Any, query_id: str, plan: KeyedPlan, topology: str = "", journal_dir: str = "",
          start_seq: int = 0) -> Any:
    """The keyed chain over the journal DataFrame ``reader`` (entries with seq > ``start_seq``, the
    query's first start); its rows have ``ROW_SCHEMA``."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    if plan.upstream:
        router = _sequential("router", query_id, plan, topology, lambda: RouterCore(plan, topology))
        df = (reader.withColumn("_g", F.lit(0)).groupBy("_g")
              .transformWithStateInPandas(router, ROW_SCHEMA, "Append", "None"))
    else:  # stateless routing: no operator start-up and no state commit per micro-batch
        route = functools.partial(_route_chunks, ("jrouter", query_id, _plan_key(plan), str(journal_dir),
                                                  int(start_seq)), plan, topology, str(journal_dir), int(start_seq))
        df = reader.mapInPandas(route, ROW_SCHEMA)
    df = df.groupBy("key").applyInPandasWithState(keyed_function(query_id, plan, topology), ROW_SCHEMA,
                                                  STATE_SCHEMA, "Append", GroupStateTimeout.NoTimeout)
    if plan.downstream:
        tail = _sequential("tail", query_id, plan, topology, lambda: TailCore(plan, topology))
        df = (df.withColumn("_g", F.lit(0)).groupBy("_g")
              .transformWithStateInPandas(tail, ROW_SCHEMA, "Append", "None"))
    return df
