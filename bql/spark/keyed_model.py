"""The keyed MATCH_RECOGNIZE chain (router → bucketed per-key operator → tail) run in-process, as Spark
runs it: the same cores, state kept between micro-batches the way the state store keeps it (tests and
benchmarks compare it with the sequential operator).

``run_segments`` snapshots the router and the tail between batches, keeps each bucket's key map,
key log and stamp in dicts (the ``MapState``s and ``ValueState``s of ``keyed_query``) and keeps the per-worker
``BucketCore`` caches across batches. With ``chaos`` (a ``random.Random``) it also permutes the order
of buckets and of keys within a bucket (Spark gives no order across groups), sometimes drops a
worker's caches (another worker takes the bucket), and sometimes runs a bucket's call as a failed
attempt first — its state writes are discarded, as a task retry's are, while its worker's cache keeps
what it computed — so the stamp rule (views are used only when the committed stamp is theirs) is
exercised.
"""
from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from .keyed_buckets import BucketCore, KeyLog, group_values, pack_rows, unpack_rows
from .keyed_ops import JournalRouter, KeyedCore, RouterCore, TailCore
from .keyed_plan import WINDOW, KeyedPlan
from .keyed_window_bucket import WindowBucket
from .keyed_window_route import WindowRouter


def run_segments(plan: KeyedPlan, batches: Iterable[list[tuple]], topology: str = "", buckets: int = 3,
                 chaos: random.Random | None = None) -> list[list[tuple]]:
    """Run journal row batches ``(seq, input, ts_us, data_text, end)`` through router → buckets → tail;
    returns each batch's output rows in the driver's order ``(seq, idx, sub)``."""
    batches = [list(b) for b in batches]
    router_snap = tail_snap = None
    keyed = KeyedCore(plan, topology)
    maps: dict[int, dict[str, bytes]] = {}      # bucket -> key -> snapshot (the committed MapState)
    stamps: dict[int, bytes] = {}               # bucket -> stamp (the committed ValueState)
    logs: dict[int, KeyLog] = {}                # bucket -> key log (the committed MapState and flag)
    workers: dict[int, BucketCore] = {}         # bucket -> the worker cache that ran it last
    bucket_of_value = {v: b for b, v in enumerate(group_values(buckets))}
    result = []
    if plan.kind == WINDOW:
        return _run_window_segments(plan, batches, topology, buckets, chaos)
    for batch in batches:
        if plan.upstream:
            rows, router_snap = _resumed_run(RouterCore(plan, topology), router_snap, batch)
        else:
            rows = JournalRouter(plan, topology).run(batch)
        produced: list[tuple] = []
        for b, brows in _routed_buckets(rows, buckets, bucket_of_value, chaos):
            if chaos is not None and chaos.random() < 0.2:
                workers.pop(b, None)
            worker = workers.setdefault(b, BucketCore(keyed))
            store = maps.setdefault(b, {})
            key_order = (lambda keys: chaos.sample(keys, len(keys))) if chaos is not None else None
            log = logs.setdefault(b, KeyLog())
            if chaos is not None and chaos.random() < 0.2:  # a failed attempt: nothing it wrote is kept
                worker.run(brows, stamps.get(b), store.get, lambda k, s: None, key_order,
                           KeyLog(log.first, log.is_ended))
            written: dict[str, bytes] = {}
            attempt = KeyLog(log.first, log.is_ended)
            out, stamp = worker.run(brows, stamps.get(b), store.get, written.__setitem__, key_order, attempt)
            store.update(written)
            stamps[b], logs[b] = stamp, attempt
            produced.extend(out)
        if plan.downstream:
            produced, tail_snap = _resumed_run(TailCore(plan, topology), tail_snap, produced)
        produced.sort(key=lambda r: (r[2], r[3], r[4]))
        result.append(produced)
    return result


def _run_window_segments(plan: KeyedPlan, batches: list[list[tuple]], topology: str, buckets: int,
                         chaos: random.Random | None) -> list[list[tuple]]:
    """``run_segments`` for a keyed window stage: the router's ordered pass, then each bucket's windows
    (a map from window start to pane, with a stamp), then the tail."""
    router_snap = tail_snap = None
    maps: dict[int, dict[str, bytes]] = {}
    stamps: dict[int, bytes] = {}
    workers: dict[int, WindowBucket] = {}
    bucket_of_value = {v: b for b, v in enumerate(group_values(buckets))}
    result = []
    for batch in batches:
        rows, router_snap = _resumed_run(WindowRouter(plan, topology, buckets), router_snap, batch)
        produced: list[tuple] = []
        for b, brows in _routed_buckets(rows, buckets, bucket_of_value, chaos):
            if chaos is not None and chaos.random() < 0.2:
                workers.pop(b, None)
            worker = workers.get(b)
            if worker is None:
                worker = workers[b] = WindowBucket(plan, topology)
            store = maps.setdefault(b, {})
            if chaos is not None and chaos.random() < 0.2:  # a failed attempt: nothing it wrote is kept
                worker.run(brows, stamps.get(b), store.get, lambda k, s: None, lambda k: None)
            written: dict[str, bytes] = {}
            removed: set[str] = set()
            out, stamp = worker.run(brows, stamps.get(b), store.get, written.__setitem__, removed.add)
            for k in removed:
                store.pop(k, None)
            store.update(written)
            stamps[b] = stamp
            produced.extend(out)
        if plan.downstream:
            produced, tail_snap = _resumed_run(TailCore(plan, topology), tail_snap, produced)
        produced.sort(key=lambda r: (r[2], r[3], r[4]))
        result.append(produced)
    return result


def _routed_buckets(rows: list[tuple], buckets: int, bucket_of_value: dict, chaos: random.Random | None
                    ) -> list[tuple[int, list[tuple]]]:
    """The router's ``rows`` as each bucket's operator receives them: packed per router chunk of 50 rows
    and unpacked again, ``(bucket, rows)`` in bucket order (shuffled with ``chaos``: Spark gives none)."""
    groups: dict[int, list[str]] = {}  # bucket -> packed texts (one per router chunk)
    for start in range(0, len(rows), 50):
        for value, text in pack_rows(rows[start:start + 50], buckets):
            groups.setdefault(bucket_of_value[value], []).append(text)
    order = list(groups)
    if chaos is not None:
        chaos.shuffle(order)
    return [(b, unpack_rows(groups[b])) for b in order]


def _resumed_run(core: Any, snap: bytes | None, rows: list[tuple]) -> tuple[list[tuple], bytes]:
    """A fresh sequential core (router or tail) restored to ``snap``, run over ``rows``: its output and
    its new snapshot (what a micro-batch of its single group does)."""
    if snap is not None:
        core.restore(snap)
    out = core.run(rows)
    return out, core.snapshot()
