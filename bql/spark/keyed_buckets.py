"""The per-key segment of a keyed MATCH_RECOGNIZE, one call per *bucket* of partition keys (Spark-free).

Spark calls a grouped Python function once per group and micro-batch, and that call has a fixed cost
(a pandas frame, a state round trip: ~0.25–1.2 ms, docs/spark-facts). Grouped by the PARTITION BY key
itself, thousands of keys cost thousands of calls per batch. So the keyed operator groups by a bucket
of the key instead:

- ``bucket = crc32(key) mod n`` (``bucket_of``) where ``key`` is ``keyed_plan.route_key``'s canonical
  text of the partition values (BQL equality) and ``n`` the bucket count, pinned in the checkpoint at
  the first start (``pin_buckets``): the bucket keys the state, so it must not change across restarts;
- the router packs each bucket's rows of a chunk into one row (``pack_rows``): the pandas
  ``transformWithState`` turns its input into pandas row by row in Python (``itertuples`` and a frame
  per key), which cost more than the matcher itself; a packed row is one JSON text;
- the grouping value of bucket ``b`` is ``group_values(n)[b]``, an int that Spark's hash partitioning
  (``pmod(murmur3(value, 42), partitions)``) sends to shuffle partition ``b``: with ``n`` equal to the
  query's shuffle partitions every partition gets exactly one group (one Python call per partition per
  batch) and no two buckets share a task by accident. The mapping only spreads the work; correctness
  needs only ``n`` to be stable;
- ``BucketCore`` runs one bucket's rows: sorted by ``(seq, idx)`` (the arrival order), split by key in
  first-arrival order, each key's rows through K's processor with that key's partition swapped in
  (``PartitionView``). K's partitions never read each other (``plan_keyed`` keeps the global watermark
  sequential), so running keys one after the other gives each key's rows exactly as in-process; the
  driver restores the global order from ``(seq, idx, sub)``.

State layout: per bucket, a map from the key's text to that key's processor snapshot (the format of
``MatchRecognizeProcessor.snapshot`` with one partition) — a batch writes only the keys it touched —,
the bucket's *key log* (``KeyLog``: each key's first seq, and whether K's input ended) and a *stamp*,
random bytes written by every call.

The end of K's input: in-process, K finishes its partitions in creation order. A stateless router
(``keyed_ops.JournalRouter``) does not know the keys, so it sends one ``ALL_KEYS`` row, which
``pack_rows`` copies to every bucket (the copy for bucket 0 marked ``LEAD``); each bucket finishes the
keys of its log in the order of their first seqs, numbering each key's rows with that seq as ``idx``,
and the lead copy also writes K's ``end`` (and K's own end of output) after them, so the driver's
``(seq, idx, sub)`` order is the in-process one across buckets. A second end is ignored, as
in-process. A worker keeps the views of the keys it ran, with
the stamp it wrote; when the bucket's stored stamp equals it, the views are exactly the committed state
(no read); otherwise (another worker ran the bucket, or a failed attempt was rolled back) they are
dropped and each key is read back from the map.
"""
from __future__ import annotations

import functools
import json
import operator
import os
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson
from sbpy.bql.runtime import gc_pause

from .keyed_ops import KeyedCore
from .keyed_plan import ALL_KEYS, ERROR_KEY, PASS_KEY

BUCKETS_FILE = "buckets.json"
LEAD = "lead"  # the ``event`` of the ``ALL_KEYS`` copy that also ends K (bucket 0's)
MAX_VIEWS = 4096  # cached key views per bucket and worker (more: the least recently run are read back)
_M32 = 0xFFFFFFFF


# ---------------------------------------------------------------- bucket count and grouping values


def pin_buckets(checkpoint: str | os.PathLike[str], buckets: int) -> int:
    """The bucket count of the keyed query checkpointed at ``checkpoint``: ``buckets`` at the first
    start (recorded there atomically), the recorded count on every restart. A checkpoint that has
    committed batches but no record is refused: its state was written with an unknown bucketing."""
    path = Path(checkpoint) / BUCKETS_FILE
    try:
        return int(json.loads(path.read_text())["buckets"])
    except FileNotFoundError:
        pass
    if (Path(checkpoint) / "commits").is_dir() and any((Path(checkpoint) / "commits").iterdir()):
        raise ValueError(f"keyed checkpoint {checkpoint} has batches but no {BUCKETS_FILE}: its state "
                         "cannot be read with a bucket count chosen now")
    if int(buckets) < 1:
        raise ValueError(f"bucket count must be positive, not {buckets}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{BUCKETS_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({"buckets": int(buckets)}))
    os.replace(tmp, path)
    return int(buckets)


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3Hash`` of an IntegerType value (``hash(col)``, and hash partitioning's key)."""
    k1 = _rotl(((value & _M32) * 0xCC9E2D51) & _M32, 15) * 0x1B873593 & _M32
    h1 = (_rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & _M32
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


DIRECT = "\x00"  # a key text naming its bucket: ``direct_key(b)`` (a route key is JSON, never this)


def direct_key(bucket: int) -> str:
    """The key text of a row the router sends to bucket ``bucket`` itself (keyed window stages)."""
    return f"{DIRECT}{bucket}"


def bucket_of(key: str | None, buckets: int) -> int:
    """The bucket of a routed row's key text (``""``/None: a row without a key): ``crc32(utf-8) mod n``,
    the same in every process and release; a ``direct_key`` names its bucket."""
    if key and key[0] == DIRECT:
        return int(key[1:]) % buckets
    return zlib.crc32((key or "").encode("utf-8")) % buckets


def pack_rows(rows: Iterable[Any], buckets: int) -> list[tuple[int, str]]:
    """Routed rows (``ROW_COLUMNS`` order) as one ``(grouping value, JSON text of the bucket's rows)``
    pair per bucket that has rows. Spark hands a grouped Python operator its input row by row (the
    pandas ``transformWithState`` regroups rows in Python), so the router sends each bucket's rows of a
    chunk as one packed row; every field is a str, an int or None, which JSON keeps exactly."""
    values = group_values(buckets)
    packs: dict[int, list] = {}
    of_key: dict[Any, int] = {}
    for r in rows:
        key = r[10]
        if key == ALL_KEYS:  # every bucket gets it; bucket 0's copy also ends K
            for b in range(buckets):
                packs.setdefault(b, []).append(r[:9] + (LEAD,) + r[10:] if b == 0 else r)
            continue
        b = of_key.get(key)
        if b is None:
            b = of_key[key] = bucket_of(key, buckets)
        pack = packs.get(b)
        if pack is None:
            pack = packs[b] = []
        pack.append(r)
    return [(values[b], orjson.dumps(pack).decode("utf-8")) for b, pack in packs.items()]


def unpack_rows(texts: Iterable[str]) -> list[list]:
    """The rows of packed texts (lists in ``ROW_COLUMNS`` order), sorted by ``(seq, idx)`` (stable: a
    routed row's place)."""
    loads = orjson.loads
    if isinstance(texts, list) and len(texts) == 1:
        rows = loads(texts[0])
    else:
        rows = [r for text in texts for r in loads(text)]
    rows.sort(key=_row_order)
    return rows


_row_order = operator.itemgetter(2, 3)  # a routed row's (seq, idx)
_run_fields = operator.itemgetter(2, 3, 0, 5, 6, 8)  # (seq, idx, kind, ts, data, input): ``KeyedCore.run_into``


@functools.lru_cache(maxsize=64)
def group_values(buckets: int) -> list[int]:
    """For each bucket ``b`` the smallest int ``v >= 0`` (distinct) with ``pmod(murmur3(v), buckets) == b``:
    the grouping value Spark's hash partitioning over ``buckets`` partitions places in partition ``b``."""
    out: dict[int, int] = {}
    v = 0
    while len(out) < buckets:
        out.setdefault(murmur3_int(v) % buckets, v)
        v += 1
    return [out[b] for b in range(buckets)]


# ---------------------------------------------------------------- one bucket's call


class PartitionView:
    """One key's share of K's processor: its partitions (``parts``), their index by str value
    (``by_str``) and the compiled lanes' feeds (``lanes``; the processor's ``process`` closes over its
    ``lanes`` dict, so that one is refilled in place). Swapping a view in is three assignments; the
    objects are the ones the key's last run left, so a warm key costs no restore."""

    __slots__ = ("by_str", "lanes", "parts")

    def __init__(self, proc: Any):
        self.parts, self.by_str, self.lanes = proc.parts, proc.by_str, dict(proc.lanes)

    def activate(self, proc: Any) -> None:
        proc.parts, proc.by_str = self.parts, self.by_str
        proc.lanes.clear()
        proc.lanes.update(self.lanes)


class KeyLog:
    """A bucket's key log: each key's first seq (``first``) and whether K's input ended (``ended``).
    In memory here (``keyed_model``, tests); ``keyed_query`` keeps it in the bucket's state."""

    def __init__(self, first: dict[str, int] | None = None, ended: bool = False):
        self.first = dict(first or {})
        self.is_ended = ended

    def add(self, key: str, seq: int) -> None:
        self.first[key] = seq

    def items(self) -> Iterable[tuple[str, int]]:
        return list(self.first.items())

    def ended(self) -> bool:
        return self.is_ended

    def end(self) -> None:
        self.is_ended = True


class BucketCore:
    """The keys of one bucket on one worker: their cached views and the stamp they correspond to."""

    def __init__(self, core: KeyedCore):
        self.core = core
        self.stamp: bytes | None = None
        self.views: dict[str, PartitionView] = {}

    def run(self, rows: Iterable[tuple], stored_stamp: bytes | None, get: Callable[[str], bytes | None],
            put: Callable[[str, bytes], None], key_order: Callable[[list[str]], list[str]] | None = None,
            log: Any = None) -> tuple[list[tuple], bytes]:
        """Rows in ``ROW_COLUMNS`` order, sorted by ``(seq, idx)`` → ``(output rows, new stamp)``.

        ``stored_stamp``: the bucket's committed stamp; ``get(key)`` a key's committed snapshot (None:
        new key), ``put(key, snap)`` records a key's new one; ``log`` the bucket's key log (a ``KeyLog``
        or the same methods over state; default a fresh one); the caller stores the new stamp with
        them. ``key_order`` permutes the keys (tests: the result must not depend on it). The cyclic
        collector is paused meanwhile (``gc_pause``)."""
        with gc_pause.paused():
            return self._run(rows, stored_stamp, get, put, key_order, KeyLog() if log is None else log)

    def _run(self, rows: Iterable[tuple], stored_stamp: bytes | None, get: Callable[[str], bytes | None],
             put: Callable[[str, bytes], None], key_order: Callable[[list[str]], list[str]] | None,
             log: Any) -> tuple[list[tuple], bytes]:
        if stored_stamp is None or stored_stamp != self.stamp:
            self.views.clear()  # the committed state is not what these views were saved as
        self.stamp = None
        groups: dict[str, list[tuple]] = {}
        out: list[tuple] = []
        ends: list[tuple] = []
        for r in rows:
            key = r[10]
            if key == PASS_KEY or key is None:
                out.append(r)
            elif key == ALL_KEYS:
                ends.append(r)
            else:
                groups.setdefault(key, []).append(r)
        core, views = self.core, self.views
        counts = core.new_counts()
        last = 0
        try:
            for key in key_order(list(groups)) if key_order else groups:
                krows = groups[key]
                self._activate(key, get, log, krows[0][2])
                core.run_into(list(map(_run_fields, krows)), out, counts)
                last = max(last, krows[-1][2])
                put(key, core.snapshot())
                views[key] = PartitionView(core.proc)
            for end in ends:
                if not log.ended():
                    log.end()
                    self._finish_all(end, get, put, log, out, counts)
                    last = max(last, end[2])
        except BaseException:
            views.clear()
            raise
        while len(views) > MAX_VIEWS:
            views.pop(next(iter(views)))
        if groups or ends:
            out.append(core.stat_row(last, counts))
        stamp = os.urandom(16)
        self.stamp = stamp
        return out, stamp

    def _activate(self, key: str, get: Callable[[str], bytes | None], log: Any, seq: int | None) -> None:
        """Swap ``key``'s partition into K's processor (its cached view, else its committed snapshot);
        a key with neither is new: its first ``seq`` goes into the log (``None``: not a new key)."""
        view = self.views.pop(key, None)
        if view is not None:
            view.activate(self.core.proc)
            return
        snap = get(key)
        if snap is None and seq is not None and key != ERROR_KEY:
            log.add(key, seq)
        self.core.load(snap)

    def _finish_all(self, end: tuple, get: Callable[[str], bytes | None], put: Callable[[str, bytes], None],
                    log: Any, out: list[tuple], counts: dict[str, Any]) -> None:
        """K's input ended at ``end`` (an ``ALL_KEYS`` row): finish every key of the log in first-seq
        order, each key's rows numbered with its first seq; the ``LEAD`` copy also ends K."""
        core, seq, name = self.core, end[2], end[8]
        for key, first in sorted(log.items(), key=lambda item: item[1]):
            self._activate(key, get, log, None)
            core.run_into([(seq, first, "eof", 0, None, name)], out, counts)
            put(key, core.snapshot())
            self.views[key] = PartitionView(core.proc)
        if end[9] == LEAD:
            node = core.node
            out.append(("end", node, seq, seq, 0, 0, None, None, None, None, PASS_KEY))
            if not core.plan.keyed_is_final:
                out.append(("eof", node, seq, seq + 1, 0, 0, None, None, node, None, PASS_KEY))
