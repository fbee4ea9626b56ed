"""Many tuples through a ``MatchRecognizeProcessor`` in one call (``process_batch``), with exactly the
step results of calling ``process`` for each tuple in turn.

The processor's lane applies only with partition-local watermarks, so its partitions never read each
other and a partition's rows may run apart from the others'. The batch is split by the one str
PARTITION BY value (all of it one group without PARTITION BY); each group runs, in the order of its
first tuple, through its partition's ``feed_run`` (``lane_batch.py``) in chunks, and every tuple the
lane does not take (its partition is new, its key is late, of another type, ...) through the
processor's per-tuple ``process`` at its place in the group. Tuples whose partition value is not a str
go through ``process`` in arrival order (their partitions are never a str value's); a batch with a
tuple whose data is not exactly a dict goes through ``process`` tuple by tuple. The partitions
the batch creates are put in the order their creating tuples arrived (``finish`` and snapshots list
partitions in that order).
"""
from __future__ import annotations

from itertools import repeat
from operator import attrgetter
from typing import Any, Callable

_DATA = attrgetter("data")
WINDOW = 1024  # tuples grouped at a time: each row is read by several passes (grouping, keys, masks),
# cheap while the window's rows stay in the CPU cache; a refusal costs a copy of the group's rest


def _groups(datas: list, pkey: Any) -> list[tuple[Any, list[int]]]:
    """``[(partition value, indexes)]`` of the tuples whose data are ``datas`` (each exactly a dict) in
    the order of each group's first tuple; the tuples whose value is not a str form one group under
    ``None`` (without PARTITION BY: one group ``()``)."""
    if pkey is None:
        return [((), list(range(len(datas))))]
    pvs = list(map(dict.get, datas, repeat(pkey)))
    groups: dict = {}
    get = groups.get
    for i, pv in enumerate(pvs):
        if type(pv) is not str:
            pv = None
        g = get(pv)
        if g is None:
            groups[pv] = [i]
        else:
            g.append(i)
    return list(groups.items())


def each(tuples: list, one: Callable[[Any], Any]) -> list:
    """``one(tup)`` for each tuple in turn; an entry is the exception it raised, where it raised one."""
    results = []
    for tup in tuples:
        try:
            results.append(one(tup))
        except Exception as exc:  # noqa: BLE001 - what ``process`` raised is that tuple's answer
            results.append(exc)
    return results


def run_batch(tuples: list, one: Callable[[Any], Any], parts: dict, by_str: dict, keys: tuple,
              nothing: Any) -> list:
    """The step results of ``tuples`` (``one``: the processor's per-tuple step; ``parts`` / ``by_str``:
    its partitions by key and by str value, each with its lane's ``run``; ``keys``: the PARTITION BY
    field or None and the ORDER BY field; ``nothing``: the shared empty result). An entry is the
    exception ``one`` raised for that tuple, where it raised one."""
    pkey, okey = keys
    results: list = [nothing] * len(tuples)
    known = len(parts)
    created: list[tuple[int, Any]] = []  # (index of the tuple, key) of each partition the batch made

    def general(i: int) -> None:
        before = len(parts)
        try:
            results[i] = one(tuples[i])
        except Exception as exc:  # noqa: BLE001 - what ``process`` raised is that tuple's answer
            results[i] = exc
        if len(parts) != before:
            created.append((i, next(reversed(parts))))

    n = len(tuples)
    datas = list(map(_DATA, tuples))
    if datas and set(map(type, datas)) != {dict}:  # (``process`` may raise for such a tuple)
        for i in range(n):
            general(i)
        return results
    for w in range(0, n, WINDOW):
        for pv, idxs in _groups(datas[w:w + WINDOW], pkey):
            if pv is None:
                for i in idxs:
                    general(w + i)
                continue
            idxs = [w + i for i in idxs]
            grun = list(map(tuples.__getitem__, idxs))
            gks = list(map(dict.get, map(datas.__getitem__, idxs), repeat(okey)))
            j, m = 0, len(idxs)
            while j < m:
                part = parts.get(()) if pkey is None else by_str.get(pv)
                if part is None or part.run is None:
                    general(idxs[j])
                    j += 1
                    continue
                took, steps = part.run(grun[j:] if j else grun, gks[j:] if j else gks)
                for k, out in steps:
                    results[idxs[j + k]] = out
                j += took
                if j < m:
                    general(idxs[j])
                    j += 1
    if len(created) > 1 and created != sorted(created, key=lambda c: c[0]):
        old = list(parts)[:known]
        order = old + [key for _, key in sorted(created, key=lambda c: c[0])]
        kept = {key: parts[key] for key in order}
        parts.clear()
        parts.update(kept)
    return results
