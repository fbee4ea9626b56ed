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
- the row goes to the end of the row store's list (``Rows.rows``) at once, held: the rows before
  ``avail`` are the released ones, the held rows (their keys in ``lk``) follow; the new watermark
  releases rows by moving ``avail``. Each released row gets its variable mask (kept for the label
  replay; a field a PREV condition reads is carried from the row before: ``RowMasks.inline_source``)
  and one fused automaton entry (``dfa.Fused``: a new attempt at the row, then the row's step) whose
  kind says what else changes — nothing, the new attempt dying (shadowed or not), only the new
  attempt living on (the failed attempts before it leave), or the runner's general bookkeeping
  (candidate matches, shadowed attempts, the head); a shadowed or empty-matching new attempt is
  started as ``AutomatonMatcher._new_attempt`` does;
- a head attempt to resolve is resolved inline as ``AutomatonMatcher._resolve`` does (a rescan goes on
  in the same loop); the rare rest — rows without an attempt (before the skip target), a resolution
  right after a shadowed new attempt, masks no longer kept — is left to the runner itself: the lane
  writes its cells back (``flush``) and calls ``AutomatonMatcher.advance``;
- the resolved events go to ``deliver`` (the processor's rendering), which reads only released rows.

While the lane is *live* its cells (and its held rows at the end of ``Rows.rows``) are the partition's
state; ``flush`` writes them to the ``Rows`` / ``AutomatonMatcher`` objects (the held rows back to
``Rows.held``), which every other path of the processor reads (it calls ``Partition.sync`` first),
and the next ``feed`` loads them again. ``feed`` returns the shared empty result when the row produced
nothing (``lane_process.nothing``), ``REFUSED``, or the ``StepResult`` of the events it resolved. The
objects' snapshot format is unchanged, so snapshots move freely between engines.
"""
from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Any

from .lane_process import REFUSED
from .matcher import skip_target

_CELLS = {  # cell -> the object attribute it mirrors ("r": the Rows, "m": the AutomatonMatcher)
    "max0": "r",
    "st": ("m", "state"), "starts": "m", "head": "m", "newest": "m", "pos": "m", "floor": "m",
    "cands": "m", "tainted": "m", "mbase": "m", "covered": "m", "mno": "m",
}

# the skip target of a resolved match (``nxt``) and its event: past its last row, or in general
_SKIP_PAST_LAST = """
                nxt = end if end > s0 else s0 + 1
                events.append(("match", s0, end, labels, mno))"""
_SKIP_GENERAL = """
                nxt, err = skip_target(spec, s0, end, labels)
                if err is None:
                    events.append(("match", s0, end, labels, mno))
                else:
                    events.append(("error", s0, end, labels, mno, err))
                    nxt = s0 + 1"""

# the labels of the match of the attempt at ``s0`` ending before ``end``
_LABELS = """
                i, j = s0 - mbase, end - mbase
                if 0 <= i and j <= len(masks):
                    key = tuple(masks[i:j])
                    labels = replays.get(key)
                    if labels is None:
                        labels = labels_of(key)
                else:
                    labels = mt.replayer.labels(s0, end, lambda x: masks[x - mbase] if 0 <= x - mbase < len(masks) else MASK_AT(rows, x))"""

# past the last row: the one earlier attempt (``dfa.COMPLETES``), the head, matched at this row and
# nothing else waits with a candidate match — the runner's ``_resolve`` of it, the new attempt dropped
_COMPLETES = """
            if kind == 5 and head == starts[0] and not cands:
                s0 = head
                p += 1
                end = p
{labels}
                mno += 1
                if end > covered:
                    covered = end
                if events is None:
                    events = []
                events.append(("match", s0, end, labels, mno))
                head = floor = end
                starts = []
                s = f.after
                if tainted:
                    tainted.clear()
                continue"""

_TEMPLATE = """
def make_lane(part, deliver):
    rows = part.rows
    mt = part.matcher
    rl = rows.rows
    kl = rows.keys
    masks = mt.masks
    labels_of = mt.replayer.labels_of
    replays = mt.replayer.cache  # (what ``labels_of`` finds first)
    lk = deque()  # the keys of the held rows: ``rl`` from ``avail`` (``Rows.held`` while the lane is live)
    live = False
    ktype = None  # the type of the largest key when it is int or float (else the lane takes no row)
    avail = 0  # the position after the last row released (``Rows.avail``; the held rows follow in ``rl``)
    mtop = 0  # the position after the last row with a mask (``mbase + len(masks)``)
    arrival0 = 0  # ``Rows.arrival`` less the rows taken (released or held) when the lane was loaded
    {cells}{carry} = (None,) * {ncells}  # (``_CELLS``, then ``RowMasks.carry_cells``)

    def load():
        nonlocal live, ktype, avail, mtop, arrival0, {cells}{carry}
        live = True
{load}
        ktype = type(max0) if type(max0) is int or type(max0) is float else None{carry_reset}
        if pos < floor or newest >= pos:  # (the runner's state of a row without an attempt: it goes on)
            ktype = None  # (the rows of the lane's loop keep ``newest == p - 1`` and ``floor <= p``)
        mtop = mbase + len(masks)
        held = rows.held
        avail = rows.base + len(rl)
        lk.clear()
        lk.extend([e[0][0] for e in held])
        rl.extend([e[2] for e in held])
        held.clear()
        arrival0 = rows.arrival - rows.base - len(rl)

    def sync_keys():
        n = len(kl)
        top = avail - rows.base if live else len(rl)  # (the rows released)
        if n < top:
            kl.extend([(r.data.get(OKEY),) for r in rl[n:top]])

    def flush():
        nonlocal live
        if not live:
            return
        live = False
{flush}
        rows.arrival = arrival = arrival0 + rows.base + len(rl)  # (each row taken counts one)
        first = arrival - len(lk) + 1
        n = avail - rows.base
        rows.held[:] = [((k, ), first + j, t) for j, (k, t) in enumerate(zip(lk, rl[n:]))]
        del rl[n:]
        lk.clear()
        sync_keys()

    def escape(p, s, tup, events):
        # the runner takes over at the top of its loop for row ``p`` (after ``events``)
        nonlocal pos, st
        pos, st = p, s
        flush()
        more = mt.advance()
        if events:
            more = events + more
        return deliver(more, tup) if more else NOTHING

    def resolve_escape(p, s, tup, events):
        # the runner resolves the head at ``p`` (after ``_new_attempt``) and goes on from there
        nonlocal pos, st
        pos, st = p, s
        flush()
        more = events or []
        mt._resolve(more)
        more.extend(mt.advance())
        return deliver(more, tup) if more else NOTHING

    def feed(tup, k0):
        nonlocal avail, mtop, {cells}{carry}
        if not live:
            load()
        if type(k0) is not ktype or not k0 >= max0:
            return REFUSED
        max0 = k0
        rl.append(tup)
        lk.append(k0)
        wm = k0 - DELAY
        if lk[0] > wm:
            return NOTHING
        while True:  # the rows the new watermark releases
            lk.popleft()
            avail += 1
            if not lk or lk[0] > wm:
                break
        base = rows.base
        p = pos
        s = st
        events = None
        while p < avail:
            if p == mtop:
                q = p - base
{mask}
                masks.append(m)
                mtop += 1
            elif 0 <= p - mbase < len(masks):  # (a rescan)
                m = masks[p - mbase]
            else:
                return escape(p, s, tup, events)
            f = {fused} or fuse(s, m)
            kind = f.kind  # (``dfa``: PLAIN 0, DIES 1, DIES_TAINTED 2, GENERAL 3, ESCAPE 4, COMPLETES 5,
            #                 RESTART 6, RESTART_TAINTED 7)
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
            if kind >= 6 and not cands and not {unmatched}:
                # only the new attempt lives; the unresolved ones before it failed (none waits with
                # a candidate match): the runner's head loop drops them all
                s = f.to
                starts = [p]
                head = p
                if tainted:
                    tainted.clear()
                if kind == 7:
                    tainted.add(p)
                p += 1
                continue
{completes}
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
                    s = empty_state
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
            while h not in cands and not ({unmatched} and h >= covered):
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
                    if {unmatched} and s0 >= covered:
                        events.append(("unmatched", s0))
                    continue
{labels}
                mno += 1
                if end > covered:
                    covered = end
{skip}
                floor = nxt
                k = bisect_left(starts, nxt)  # (the attempts before ``nxt`` leave)
                s = s.cleared.get(k) or clear(s, k)
                if k:
                    del starts[:k]
                if nxt > head:
                    head = nxt
                    if nxt > newest:  # (no attempt in ``cands`` or ``tainted`` starts after ``newest``)
                        cands.clear()
                        tainted.clear()
                    else:  # (loops, not comprehensions: those would make ``nxt`` a cell of every call)
                        for a in [*cands]:
                            if a < nxt:
                                del cands[a]
                        for a in [*tainted]:
                            if a < nxt:
                                tainted.discard(a)
                if nxt < p and tainted:
                    s = empty_state
                    starts = []
                    cands = {{}}
                    tainted = set()
                    head, newest, p = nxt, nxt - 1, nxt
        pos = p
        st = s
        out = deliver(events, tup) if events else NOTHING
        if avail - base > 64:  # forget the rows nothing reads any more (as ``MatchRecognizeProcessor._run``)
            keep = (head if head <= newest else p) - LOOKBACK - base
            if keep > 64 and keep * 2 >= avail - base:
                del rl[:keep]
                if len(kl) > keep:  # (``kl`` keys the first rows of ``rl``: ``sync_keys`` adds the rest)
                    del kl[:keep]
                else:
                    kl.clear()
                rows.base = base + keep
            if len(masks) > 8193:  # and the masks (as ``AutomatonMatcher._trim_masks``)
                keep = min(head, p - 1) - mbase
                if keep > 4096:
                    del masks[:keep]
                    mbase += keep
        return out

    return feed, flush, sync_keys

"""


def _attr(cell: str) -> tuple[str, str]:
    where = _CELLS[cell]
    return (where, cell) if isinstance(where, str) else where


def lane_source(masks: Any, listed: bool, unmatched: bool, past_last: bool) -> str:
    """The source of ``make_lane(part, deliver) -> (feed, flush)`` for the DEFINE masks ``masks``;
    ``listed``: the automaton's states keep their ``fused`` in lists (``dfa.Automaton.listed``);
    ``unmatched``, ``past_last``: as for ``compile_lane``."""
    names = list(_CELLS)
    load, flush = [], []
    for cell in names:
        obj, attr = _attr(cell)
        target = "rows" if obj == "r" else "mt"
        load.append(f"        {cell} = {target}.{attr}")
        flush.append(f"        {target}.{attr} = {cell}")
    # the lane computes masks in row order and keeps the rows back to the PREV reach (``LOOKBACK``):
    # a field read for one row is carried to the next (``RowMasks.inline_source``)
    mask = masks.inline_source("rl", "q", " " * 16, carry=True)
    carry = masks.carry_cells()
    labels = _LABELS.strip("\n")
    return _TEMPLATE.format(cells=", ".join(names), carry="".join(f", {c}" for c in carry),
                            ncells=len(names) + len(carry), load="\n".join(load), flush="\n".join(flush),
                            mask="\n".join(mask), carry_reset=f"\n        {carry[0]} = None" if carry else "",
                            fused="s.fused[m]" if listed else "s.fused.get(m)", unmatched=unmatched,
                            skip=(_SKIP_PAST_LAST if past_last else _SKIP_GENERAL).strip("\n"),
                            labels=labels,
                            completes=_COMPLETES.strip("\n").format(labels=labels) if past_last else "")


def compile_lane(masks: Any, automaton: Any, spec: Any, nothing_result: Any, *, delay: Any, lookback: int,
                 unmatched: bool, order_key: str, past_last: bool) -> Any:
    """``make_lane(part, deliver)`` for one clause: ``part`` has ``rows`` (``Rows``) and ``matcher``
    (``AutomatonMatcher`` over ``automaton`` for ``spec``); ``deliver(events, tup)`` renders events
    into a ``StepResult``; ``nothing_result`` is what ``feed`` returns for a row that produced nothing
    (``nothing``); ``delay`` is the reorder delay (a number), ``lookback`` the PREV reach,
    ``unmatched`` whether unmatched rows are reported, ``order_key`` the ORDER BY field, ``past_last``
    whether the clause skips past the last row of a match (``matcher.skip_target`` inlined)."""
    ns = dict(masks.namespace)
    ns.update(deque=deque, bisect_left=bisect_left, REFUSED=REFUSED, NOTHING=nothing_result, DELAY=delay,
              LOOKBACK=lookback, OKEY=order_key, skip_target=skip_target, MASK_AT=masks.mask_at, spec=spec,
              empty_state=automaton.empty, fuse=automaton.fuse, step=automaton.step, clear=automaton.clear,
              add=automaton.add)
    source = lane_source(masks, bool(automaton.listed), unmatched, past_last)
    exec(compile(source, "<MATCH_RECOGNIZE lane>", "exec"), ns)  # noqa: S102
    return ns["make_lane"]
