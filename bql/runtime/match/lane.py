"""The compiled lane: one generated Python function per MATCH_RECOGNIZE clause that takes an in-order
row of a partition through the reorder buffer and the automaton in one call.

``MatchRecognizeProcessor`` gives each partition a lane when the clause runs on the automaton with the
default time order, one ORDER BY field, at most one (str) PARTITION BY field and no measure reading a
later row. The lane does exactly what ``Rows.offer`` + ``AutomatonMatcher.advance`` (``partition.py``,
``runner.py``) do for such a row, with their hot fields in the closure's cells instead of object
attributes and the DEFINE conditions (``conditions.RowMasks``) inlined into the loop:

- the row is taken only when its ORDER BY key is an int or float of the type of, and at least, the
  largest key seen (such a row is never late and goes after every held row); for anything else
  ``feed`` returns ``REFUSED`` before it changes anything, and the processor takes its general path;
- the rows the new watermark releases move to the row store; each gets its variable mask (kept for
  the label replay) and one fused automaton entry (``dfa.Fused``: a new attempt at the row, then the
  row's step) whose kind says what else changes — nothing, the new attempt dying (shadowed or not),
  only the new attempt living on (the failed attempts before it leave), or the runner's general
  bookkeeping (candidate matches, shadowed attempts, the head); a shadowed or empty-matching new
  attempt is started as ``AutomatonMatcher._new_attempt`` does;
- a head attempt to resolve is resolved inline as ``AutomatonMatcher._resolve`` does (a rescan goes on
  in the same loop); the rare rest — rows without an attempt (before the skip target), a resolution
  right after a shadowed new attempt, masks no longer kept — is left to the runner itself: the lane
  writes its cells back (``flush``) and calls ``AutomatonMatcher.advance``.

While the lane is *live* its cells (and its held rows, ``lh``) are the partition's state; ``flush``
writes them to the ``Rows`` / ``AutomatonMatcher`` objects, which every other path of the processor
reads (it calls ``_Partition.sync`` first), and the next ``feed`` loads them again. ``feed`` returns
None (nothing produced), ``REFUSED``, or the ``StepResult`` of the events it resolved. The objects'
snapshot format is unchanged, so snapshots move freely between engines.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from .matcher import skip_target

REFUSED = object()  # ``feed``'s answer for a row the lane does not take (nothing was changed)

_CELLS = {  # cell -> the object attribute it mirrors ("r": the Rows, "m": the AutomatonMatcher)
    "max0": "r", "arrival": "r",
    "st": ("m", "state"), "starts": "m", "head": "m", "newest": "m", "pos": "m", "floor": "m",
    "cands": "m", "tainted": "m", "mbase": "m", "covered": "m", "mno": "m",
}

_TEMPLATE = """
def make_lane(part, deliver):
    rows = part.rows
    mt = part.matcher
    rl = rows.rows
    kl = rows.keys
    masks = mt.masks
    auto = mt.auto
    empty = auto.empty
    fuse = auto.fuse
    step = auto.step
    clear = auto.clear
    labels_of = mt.replayer.labels_of
    spec = mt.spec
    lh = deque()  # the held rows: (key, tuple) in arrival order (``Rows.held`` while the lane is live)
    live = False
    ktype = None  # the type of the largest key when it is int or float (else the lane takes no row)
    {cells} = (None,) * {ncells}

    def load():
        nonlocal live, ktype, {cells}
        live = True
{load}
        ktype = type(max0) if type(max0) is int or type(max0) is float else None
        lh.clear()
        lh.extend([(e[0][0], e[2]) for e in rows.held])
        rows.held.clear()

    def sync_keys():
        n = len(kl)
        if n < len(rl):
            kl.extend([(r.data.get(OKEY),) for r in rl[n:]])

    def flush():
        nonlocal live
        if not live:
            return
        live = False
{flush}
        first = arrival - len(lh) + 1
        rows.held[:] = [((k, ), first + j, t) for j, (k, t) in enumerate(lh)]
        lh.clear()
        sync_keys()

    def escape(p, s, tup, events):
        # the runner takes over at the top of its loop for row ``p`` (after ``events``)
        nonlocal pos, st
        pos, st = p, s
        flush()
        more = mt.advance()
        if events:
            more = events + more
        return deliver(part, more, tup) if more else None

    def resolve_escape(p, s, tup, events):
        # the runner resolves the head at ``p`` (after ``_new_attempt``) and goes on from there
        nonlocal pos, st
        pos, st = p, s
        flush()
        more = events or []
        mt._resolve(more)
        more.extend(mt.advance())
        return deliver(part, more, tup) if more else None

    def feed(tup, k0):
        nonlocal {cells}
        if not live:
            load()
        if type(k0) is not ktype or not k0 >= max0:
            return REFUSED
        max0 = k0
        arrival += 1
        lh.append((k0, tup))
        wm = k0 - DELAY
        if lh[0][0] > wm:
            return None
        while True:  # the rows the new watermark releases
            rl.append(lh.popleft()[1])
            if not lh or lh[0][0] > wm:
                break
        base = rows.base
        avail = base + len(rl)
        p = pos
        s = st
        events = None
        while p < avail:
            if p < floor or newest >= p:
                return escape(p, s, tup, events)
            i = p - mbase
            if i == len(masks):
                q = p - base
{mask}
                masks.append(m)
                if i > 8192:
                    keep = min(head, p) - mbase
                    if keep > 4096:
                        del masks[:keep]
                        mbase += keep
            elif 0 <= i < len(masks):
                m = masks[i]
            else:
                return escape(p, s, tup, events)
            f = s.fused.get(m) or fuse(s, m)
            kind = f.kind
            if head > newest:
                head = p
            newest = p
            if kind == 2:
                s = f.to
                tainted.add(p)
                p += 1
                continue
            if kind == 0:
                s = f.to
                starts.append(p)
                p += 1
                continue
            if kind == 1:
                s = f.to
                p += 1
                continue
            if kind >= 5 and not cands and not UNMATCHED:
                # only the new attempt lives; the unresolved ones before it failed (none waits with
                # a candidate match): the runner's head loop drops them all
                s = f.to
                starts = [p]
                head = p
                if tainted:
                    tainted.clear()
                if kind == 6:
                    tainted.add(p)
                p += 1
                continue
            if kind == 3 or kind >= 5:
                s = f.to
                starts.append(p)
                p += 1
                edge = f.edge
            else:  # the runner's ``_new_attempt`` (shadowed or empty-matching), then the row's step
                to, _, shadowed, matched = s.added or add(s)
                if matched:
                    cands[p] = p
                if shadowed:
                    tainted.add(p)
                if len(to.comps) > len(s.comps):
                    starts.append(p)
                s = to
                if not starts or starts[0] != head:
                    return resolve_escape(p, s, tup, events)
                p += 1
                if not s.comps:
                    s = empty
                    continue
                m &= s.needs
                edge = s.steps.get(m) or step(s, m)
                s = edge.to
                if edge.plain:
                    continue
            if edge.cand:
                for k in edge.cand:
                    cands[starts[k]] = p
            if edge.taint:
                for k in edge.taint:
                    tainted.add(starts[k])
            if edge.lo >= 0:
                starts = starts[edge.lo:edge.hi]
            else:
                starts = [starts[k] for k in edge.keep]
            if not edge.head_left:
                continue
            h = head
            while h not in cands and not (UNMATCHED and h >= covered):
                if tainted:
                    tainted.discard(h)
                h += 1
                if h > newest or (starts and starts[0] == h):
                    break
            head = h
            if h > newest or (starts and starts[0] == h):
                continue
            # the runner's ``_resolve`` (a rescan goes on in this loop)
            if events is None:
                events = []
            while head <= newest:
                s0 = head
                if starts and starts[0] == s0:
                    break
                head = s0 + 1
                tainted.discard(s0)
                end = cands.pop(s0, None)
                if end is None:
                    if UNMATCHED and s0 >= covered:
                        events.append(("unmatched", s0))
                    continue
                i, j = s0 - mbase, end - mbase
                if 0 <= i and j <= len(masks):
                    labels = labels_of(tuple(masks[i:j]))
                else:
                    labels = mt.replayer.labels(s0, end, lambda x: masks[x - mbase] if 0 <= x - mbase < len(masks) else MASK_AT(rows, x))
                mno += 1
                if PAST_LAST:
                    nxt, err = (end if end > s0 else s0 + 1), None
                else:
                    nxt, err = skip_target(spec, s0, end, labels)
                if end > covered:
                    covered = end
                if err is None:
                    events.append(("match", s0, end, labels, mno))
                else:
                    events.append(("error", s0, end, labels, mno, err))
                    nxt = s0 + 1
                floor = nxt
                k = 0
                while k < len(starts) and starts[k] < nxt:
                    k += 1
                s = s.cleared.get(k) or clear(s, k)
                if k:
                    del starts[:k]
                if nxt > head:
                    head = nxt
                    if cands:
                        cands = {{a: e for a, e in cands.items() if a >= nxt}}
                    if tainted:
                        tainted = {{a for a in tainted if a >= nxt}}
                if nxt < p and tainted:
                    s = empty
                    starts = []
                    cands = {{}}
                    tainted = set()
                    head, newest, p = nxt, nxt - 1, nxt
        pos = p
        st = s
        out = None
        if events:
            out = deliver(part, events, tup)
        if len(rl) > 64:  # forget the rows nothing reads any more (as ``MatchRecognizeProcessor._run``)
            keep = (head if head <= newest else p) - LOOKBACK - base
            if keep > 64 and keep * 2 >= len(rl):
                del rl[:keep]
                if len(kl) > keep:  # (``kl`` keys the first rows of ``rl``: ``sync_keys`` adds the rest)
                    del kl[:keep]
                else:
                    kl.clear()
                rows.base = base + keep
        return out

    return feed, flush, sync_keys

"""


class _NoRows(list):
    """An empty list that cannot be changed (the lists of ``NOTHING``)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the shared empty StepResult of MATCH_RECOGNIZE cannot be changed")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


def nothing(step_result: type) -> Any:
    """A shared ``StepResult`` with no outputs and no drops that cannot be changed: what a lane's
    step returns when a row produced nothing (most rows), instead of a new empty result."""
    cls = type("NoStep", (step_result,), {"__slots__": (), "__setattr__": _NoRows._refuse})
    out = object.__new__(cls)
    object.__setattr__(out, "outputs", _NoRows())
    object.__setattr__(out, "dropped", _NoRows())
    object.__setattr__(out, "done", False)
    return out


def make_process(lanes: dict, partition_key: Any, order_key: str, general: Any, empty: Any) -> Any:
    """``process(tup)`` of a processor with lanes: the tuple's partition's lane (``lanes``: its one
    str PARTITION BY value, or ``()`` without PARTITION BY → ``feed``) when it takes the tuple,
    else ``general(tup)``; ``empty``: the result of a row that produced nothing (``nothing``)."""
    if partition_key is None:
        def process(tup: Any) -> Any:
            feed = lanes.get(())
            if feed is not None:
                out = feed(tup, tup.data.get(order_key))
                if out is None:
                    return empty
                if out is not REFUSED:
                    return out
            return general(tup)
        return process

    def process_keyed(tup: Any) -> Any:
        data = tup.data
        pv = data.get(partition_key)
        if type(pv) is str:
            feed = lanes.get(pv)
            if feed is not None:
                out = feed(tup, data.get(order_key))
                if out is None:
                    return empty
                if out is not REFUSED:
                    return out
        return general(tup)
    return process_keyed


def _attr(cell: str) -> tuple[str, str]:
    where = _CELLS[cell]
    return (where, cell) if isinstance(where, str) else where


def lane_source(masks: Any) -> str:
    """The source of ``make_lane(part, deliver) -> (feed, flush)`` for the DEFINE masks ``masks``."""
    names = list(_CELLS)
    load, flush = [], []
    for cell in names:
        obj, attr = _attr(cell)
        target = "rows" if obj == "r" else "mt"
        load.append(f"        {cell} = {target}.{attr}")
        flush.append(f"        {target}.{attr} = {cell}")
    mask = masks.inline_source("rl", "q", " " * 16)
    return _TEMPLATE.format(cells=", ".join(names), ncells=len(names), load="\n".join(load),
                            flush="\n".join(flush), mask="\n".join(mask))


def compile_lane(masks: Any, delay: Any, lookback: int, unmatched: bool, order_key: str, past_last: bool) -> Any:
    """``make_lane(part, deliver)`` for one clause: ``part`` has ``rows`` (``Rows``) and ``matcher``
    (``AutomatonMatcher``); ``deliver(part, events, tup)`` renders events into a ``StepResult``;
    ``delay`` is the reorder delay (a number), ``lookback`` the PREV reach, ``unmatched`` whether
    unmatched rows are reported, ``order_key`` the ORDER BY field, ``past_last`` whether the clause
    skips past the last row of a match (``matcher.skip_target`` inlined)."""
    ns = dict(masks.namespace)
    ns.update(deque=deque, REFUSED=REFUSED, DELAY=delay, LOOKBACK=lookback, UNMATCHED=unmatched, OKEY=order_key,
              skip_target=skip_target, MASK_AT=masks.mask_at, PAST_LAST=past_last)
    source = lane_source(masks)
    exec(compile(source, "<MATCH_RECOGNIZE lane>", "exec"), ns)  # noqa: S102
    return ns["make_lane"]
