"""The Spark side of a keyed query (MATCH_RECOGNIZE by partition, Timeplus windows by GROUP BY key): three
chained stateful operators.

::

    sbpy_routed (route: JournalRouter in the reads)                       no stage before K: stateless
    │  or sbpy_routed (pack) ─► groupBy(0).transformWithStateInPandas(router)  upstream stages, keys
    ─► groupBy(_b).transformWithStateInPandas(keyed)                     one group per bucket of keys
    ─► groupBy(0).transformWithStateInPandas(tail)                       only if stages follow K

Spark 4 chains ``transformWithStateInPandas`` operators in Append mode without watermarks (it accepts
only one ``applyInPandasWithState`` per query; docs/spark-facts). The per-key operator groups by a
bucket of the partition key (``keyed_buckets``: ``crc32(key) mod n``, ``n`` pinned in the checkpoint,
each bucket's grouping value placed in its own shuffle partition), so Spark calls Python once per
bucket and micro-batch, not once per key; the router sends each bucket's rows of a chunk as one packed
row (``PACK_SCHEMA``), because the pandas ``transformWithState`` regroups its input in Python row by
row. Without upstream stages the routing is stateless and runs in the journal source's reads
(``routed_source``, ``route_rows``): the journal rows never cross to the JVM and back. State: the
router and the tail keep one pickled
snapshot (``ValueState``: their Pipeline, and the router's key list); each bucket keeps a ``MapState``
from key text to that key's matcher snapshot — a batch writes only the keys it touched — and a
``stamp``. Warm cores and key views are cached per Python worker and reused while Spark's state is what
they saved (``_core`` compares snapshots; a bucket compares its stamp).

A keyed window stage (``KeyedPlan.kind`` WINDOW) always has the stateful router (``WindowRouter``: the
watermark, the open windows and which buckets hold them), fed by ``sbpy_routed`` in its ``pack`` mode,
whose reads pack each chunk of journal rows into one row (``pack_journal_rows``: the router's
``transformWithState`` would otherwise regroup every journal row in Python), and buckets of windows (``WindowBucket``: a ``MapState``
from window start to the bucket's pickled pane of it, and the stamp).
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from sbpy.bql.runtime import gc_pause

from .keyed_buckets import BucketCore, pack_rows, pin_buckets, unpack_rows
from .keyed_ops import ROW_COLUMNS, ROW_SCHEMA, JournalRouter, KeyedCore, RouterCore, TailCore
from .keyed_plan import WINDOW, KeyedPlan
from .keyed_window_bucket import WindowBucket
from .keyed_window_route import WindowRouter
from .routed_source import MODES as SOURCE_SCHEMAS

STATE_SCHEMA = "snap binary"
PACK_SCHEMA = SOURCE_SCHEMAS["route"]  # router → keyed: a bucket's rows of a chunk, packed (keyed_buckets)
STAMP_SCHEMA = "stamp binary"
KEY_SCHEMA = "key string"
FIRST_SCHEMA = "first long"
ENDED_SCHEMA = "ended boolean"
# inside the consumer's checkpoint folder: a different plan, its own layout (v3: bucketed MapState;
# v4: each bucket's key log, so the end of K's input needs no journal rescan)
CHECKPOINT_SUBDIR = "keyed-v4"
_INT_COLUMNS = ("seq", "idx", "sub", "ts")

# Per worker process: warm cores, and per (query, bucket) the views of the keys it ran.
_CORES: dict[tuple, Any] = {}
_BUCKETS: dict[tuple, Any] = {}  # BucketCore, or WindowBucket for a keyed window stage


def _frame(rows: list[tuple]) -> Any:
    import pandas as pd

    if rows:
        return pd.DataFrame.from_records(rows, columns=ROW_COLUMNS)
    return pd.DataFrame({c: pd.Series(dtype="int64" if c in _INT_COLUMNS else "object") for c in ROW_COLUMNS})


def _packed(buckets: int, rows: list[tuple]) -> Any:
    """The router's output frame: its rows packed per bucket (``keyed_buckets.pack_rows``)."""
    import pandas as pd

    packs = pack_rows(rows, buckets)
    return pd.DataFrame({"_b": pd.Series([p[0] for p in packs], dtype="int32"),
                         "rows": pd.Series([p[1] for p in packs], dtype="object")})


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


@gc_pause.paused()  # the batch's rows are acyclic (``gc_pause``)
def _run_sequential(role: str, cache_key: tuple, make: Callable[[], Any], emit: Callable[[list], Any], state: Any,
                    rows: Iterator[Any]) -> Any:
    """One micro-batch of a sequential core (router or tail) in its single group; ``emit`` makes the
    output frame of its rows."""
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
    return emit(out)


def _sequential(role: str, query_id: str, plan: KeyedPlan, topology: str, make: Callable[[], Any],
                emit: Callable[[list], Any]) -> Any:
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
            yield _run_sequential(role, cache_key, make, emit, self.state, rows)

        def close(self) -> None:
            pass

    return _Sequential()


def pack_journal_rows(rows: list[tuple]) -> str:
    """Journal rows as a one-group router's packed input (a keyed window plan's, or one running upstream
    stages): a JSON list of ``[seq, input, ts, data, end, error]``, so its ``transformWithState`` gets one
    row per read chunk instead of regrouping every journal row in Python (``routed_source``'s ``pack``
    mode)."""
    return orjson.dumps(rows).decode("utf-8")


def _feed(role: str, core: Any, pdf: Any) -> list[tuple]:
    if role in ("window-router", "router"):  # packed journal rows (``pack_journal_rows``), in arrival order
        rows = [tuple(r) for text in pdf["rows"].tolist() for r in orjson.loads(text)]
        rows.sort(key=_seq_of)
        return core.run(rows)
    return core.run(list(pdf[ROW_COLUMNS].itertuples(index=False, name=None)))


class _StateKeyLog:
    """A bucket's ``keyed_buckets.KeyLog`` in its state: ``first`` a ``MapState`` (key text → first
    seq), ``ended`` a ``ValueState``."""

    def __init__(self, first: Any, ended: Any):
        self.first_state, self.ended_state = first, ended

    def add(self, key: str, seq: int) -> None:
        self.first_state.updateValue((key,), (int(seq),))

    def items(self) -> list[tuple[str, int]]:
        return [(k[0], int(v[0])) for k, v in self.first_state.iterator()]

    def ended(self) -> bool:
        if not self.ended_state.exists():
            return False
        value = self.ended_state.get()
        return bool(value is not None and value[0])

    def end(self) -> None:
        self.ended_state.update((True,))


@gc_pause.paused()  # the batch's rows are acyclic (``gc_pause``)
def _run_bucket(cache_key: tuple, plan: KeyedPlan, topology: str, bucket: int, frames: Iterator[Any],
                stamp: Any, snaps: Any, log: Any) -> Any:
    """One micro-batch of one bucket (``keyed_buckets.BucketCore``): ``stamp`` is the bucket's
    ``ValueState``, ``snaps`` its ``MapState`` (key text → that key's snapshot), ``log`` its key log."""
    texts = [t for f in frames for t in f["rows"].tolist()]
    if not texts:
        return _frame([])
    core = _CORES.get(cache_key)
    if core is None:
        core = _CORES[cache_key] = KeyedCore(plan, topology)
    bkey = (cache_key, bucket)
    worker = _BUCKETS.get(bkey)
    if worker is None:
        worker = _BUCKETS[bkey] = BucketCore(core)
    rows = unpack_rows(texts)
    saved = stamp.get()

    def get(key: str) -> bytes | None:
        value = snaps.getValue((key,))
        return bytes(value[0]) if value is not None and value[0] is not None else None

    out, new = worker.run(rows, bytes(saved[0]) if saved is not None else None, get,
                          lambda key, snap: snaps.updateValue((key,), (snap,)), log=log)
    stamp.update((new,))
    return _frame(out)


def _keyed(query_id: str, plan: KeyedPlan, topology: str) -> Any:
    """The bucketed per-key ``StatefulProcessor`` (built here, pyspark imported lazily, pickled by
    value; the per-worker caches are reached through the module-level ``_run_bucket``)."""
    from pyspark.sql.streaming import StatefulProcessor

    cache_key = ("keyed", query_id, _plan_key(plan))

    class _Keyed(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.stamp = handle.getValueState("stamp", STAMP_SCHEMA)
            self.snaps = handle.getMapState("snaps", KEY_SCHEMA, STATE_SCHEMA)
            self.log = _StateKeyLog(handle.getMapState("first", KEY_SCHEMA, FIRST_SCHEMA),
                                    handle.getValueState("ended", ENDED_SCHEMA))

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            yield _run_bucket(cache_key, plan, topology, int(key[0]), rows, self.stamp, self.snaps, self.log)

        def close(self) -> None:
            pass

    return _Keyed()


@gc_pause.paused()  # the batch's rows are acyclic (``gc_pause``)
def _run_window_bucket(cache_key: tuple, plan: KeyedPlan, topology: str, bucket: int, frames: Iterator[Any],
                       stamp: Any, panes: Any) -> Any:
    """One micro-batch of one bucket of a keyed window stage (``keyed_window_bucket.WindowBucket``):
    ``stamp`` is the bucket's ``ValueState``, ``panes`` its ``MapState`` (window start → pickled pane)."""
    texts = [t for f in frames for t in f["rows"].tolist()]
    if not texts:
        return _frame([])
    bkey = (cache_key, bucket)
    worker = _BUCKETS.get(bkey)
    if worker is None:
        worker = _BUCKETS[bkey] = WindowBucket(plan, topology)
    saved = stamp.get()

    def get(key: str) -> bytes | None:
        value = panes.getValue((key,))
        return bytes(value[0]) if value is not None and value[0] is not None else None

    out, new = worker.run(unpack_rows(texts), bytes(saved[0]) if saved is not None else None, get,
                          lambda key, snap: panes.updateValue((key,), (snap,)),
                          lambda key: panes.removeKey((key,)))
    stamp.update((new,))
    return _frame(out)


def _window_keyed(query_id: str, plan: KeyedPlan, topology: str) -> Any:
    """The bucketed ``StatefulProcessor`` of a keyed window stage (as ``_keyed``: built here, the caches
    reached through the module-level ``_run_window_bucket``)."""
    from pyspark.sql.streaming import StatefulProcessor

    cache_key = ("window", query_id, _plan_key(plan))

    class _WindowKeyed(StatefulProcessor):
        def init(self, handle: Any) -> None:
            self.stamp = handle.getValueState("stamp", STAMP_SCHEMA)
            self.panes = handle.getMapState("panes", KEY_SCHEMA, STATE_SCHEMA)

        def handleInputRows(self, key: Any, rows: Iterator[Any], timerValues: Any) -> Iterator[Any]:
            yield _run_window_bucket(cache_key, plan, topology, int(key[0]), rows, self.stamp, self.panes)

        def close(self) -> None:
            pass

    return _WindowKeyed()


def route_rows(query_id: str, plan: KeyedPlan, topology: str, buckets: int, rows: list[tuple]
               ) -> list[tuple[int, str]]:
    """The stateless routing of a plan without upstream stages (``JournalRouter``) over one chunk of
    journal rows ``(seq, input, ts, data, end, error)``: ``keyed_buckets.pack_rows``' packed rows, one per
    bucket that has rows (``routed_source``'s ``route`` mode; the router is cached per worker)."""
    cache_key = ("jrouter", query_id, _plan_key(plan))
    core = _CORES.get(cache_key)
    if core is None:
        core = _CORES[cache_key] = JournalRouter(plan, topology)
    with gc_pause.paused():  # the chunk's rows are acyclic (``gc_pause``)
        ordered = sorted(rows, key=_seq_of)  # stable; a read range comes in seq order already
        return pack_rows(core.run(ordered), buckets)


_seq_of = operator.itemgetter(0)  # a journal row's seq


def source_mode(plan: KeyedPlan) -> str:
    """How ``routed_source`` reads the journal for ``plan``: ``"route"`` (no upstream stage: the
    stateless routing) or ``"pack"`` (the input of a one-group router: a keyed window plan's, or one
    running upstream stages)."""
    return "route" if plan.kind != WINDOW and not plan.upstream else "pack"


def bucket_count(spark: Any, checkpoint: Any, partitions: int | None) -> int:
    """The bucket count of the keyed query at ``checkpoint`` (pinned there at its first start):
    ``partitions`` (the state partitions asked for a new checkpoint) or the session's shuffle
    partitions. Pass the result as the query's shuffle partitions, so each bucket has its own."""
    return pin_buckets(checkpoint, int(partitions or spark.conf.get("spark.sql.shuffle.partitions")))


def build(reader: Any, query_id: str, plan: KeyedPlan, topology: str = "", buckets: int = 1) -> Any:
    """The keyed chain with ``buckets`` buckets of keys (``bucket_count``) over ``reader``, the
    ``sbpy_routed`` stream in the plan's ``source_mode`` (the routed rows for a plan without upstream
    stages, else packed journal rows for its one-group router). Its rows have ``ROW_SCHEMA``."""
    from pyspark.sql import functions as F

    if plan.kind == WINDOW:  # the ordered pass keeps the watermark and the open windows: one stateful group
        router = _sequential("window-router", query_id, plan, topology,
                             lambda: WindowRouter(plan, topology, buckets), functools.partial(_packed, buckets))
        df = reader.groupBy("_g").transformWithStateInPandas(router, PACK_SCHEMA, "Append", "None")
    elif plan.upstream:
        router = _sequential("router", query_id, plan, topology, lambda: RouterCore(plan, topology),
                             functools.partial(_packed, buckets))
        df = reader.groupBy("_g").transformWithStateInPandas(router, PACK_SCHEMA, "Append", "None")
    else:  # routed by the source's reads: no operator start-up and no state commit per micro-batch
        df = reader
    keyed = _window_keyed(query_id, plan, topology) if plan.kind == WINDOW else _keyed(query_id, plan, topology)
    df = df.groupBy("_b").transformWithStateInPandas(keyed, ROW_SCHEMA, "Append", "None")
    if plan.downstream:
        tail = _sequential("tail", query_id, plan, topology, lambda: TailCore(plan, topology), _frame)
        df = (df.withColumn("_g", F.lit(0)).groupBy("_g")
              .transformWithStateInPandas(tail, ROW_SCHEMA, "Append", "None"))
    return df
