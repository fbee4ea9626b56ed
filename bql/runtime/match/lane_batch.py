"""The compiled lane's batch entry: ``feed_run`` takes a run of rows of one partition in one call, with
exactly the step results ``feed`` gives when called for each row in turn.

``lane.py`` generates it into the same function as ``feed`` and ``flush`` (it shares their cells).
For the in-order prefix of the run (every ORDER BY key of the type of, and at least, the key before:
checked with ``map``, not row by row) it does in bulk what ``feed`` does row by row:

- the reorder buffer: the held keys followed by the run's are sorted, so the rows the last key's
  watermark releases are a prefix found by bisection; they move to the row store at once. Which
  tuple released a row (the one whose step reports what the row resolves) is found by bisection
  over the run's watermarks when a row resolves something: the first tuple whose watermark reaches
  the row's key, not before the row itself arrived;
- the DEFINE masks of the released rows in one pass (``RowMasks.run_source``: each field read once, the
  look-back values carried from row to row);
- the automaton over those masks in a tight loop for the fused entries that change nothing but the
  attempt list (plain, dies, dies shadowed, restart); every other row takes the lane's per-row code
  (``lane.py``), the match resolution included;
- the runner's takeover (``escape``): the row store is cut back to the rows the step's tuple had
  released, so the runner stops where it stopped for that tuple, and the rest is put back after.

The events of each tuple's step are rendered (``deliver``) when the next tuple's first event comes, or
at the end; rows are forgotten (as at the end of ``feed``) once, at the end of the run. A held key
that is NaN (possible through the general path) makes the run go row by row through ``feed``.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import chain, repeat
from operator import ge, sub

NAMESPACE = {"bisect_left": bisect_left, "bisect_right": bisect_right, "chain": chain, "repeat": repeat,
             "ge": ge, "sub": sub}

# the source of ``feed_run`` and its helpers, indented into ``make_lane`` (``{cells}``: the cells)
TEMPLATE = """
    def feed_each(run, ks, n):
        # a run whose held rows cannot be bisected: ``feed`` row by row
        steps = []
        for k in range(n):
            out = feed(run[k], ks[k])
            if out is REFUSED:
                return k, steps
            if out is not None:
                steps.append((k, out))
        return n, steps

    def feed_run(run, ks):
        # ``run``: tuples of this partition in arrival order, ``ks`` their ORDER BY keys ->
        # (how many the lane took, [(index in run, step result)] of the taken rows that produced
        # something); the first not taken is for the processor's general path
        nonlocal {cells}
        if not live:
            load()
        n = len(ks)
        if ktype is None or not n:
            return 0, []
        if set(map(type, ks)) != {{ktype}} or not all(map(ge, ks, chain((max0,), ks))):
            n = 0
            prev = max0
            for k0 in ks:
                if type(k0) is not ktype or not k0 >= prev:
                    break
                prev = k0
                n += 1
            if not n:
                return 0, []
            ks = ks[:n]
        for e in lh:
            if e[0] != e[0]:
                return feed_each(run, ks, n)
        nheld = len(lh)
        hk = [e[0] for e in lh]
        hk += ks
        ht = [e[1] for e in lh]
        ht += run[:n] if n < len(run) else run
        wms = list(map(sub, ks, repeat(DELAY)))  # each tuple's watermark
        r = bisect_right(hk, wms[-1])
        max0 = ks[-1]
        arrival += n
        lh.clear()
        if r < len(hk):
            lh.extend(zip(hk[r:], ht[r:]))
        base = rows.base
        avail0 = base + len(rl)
        steps = []
        if not r:
            return n, steps
        synced = len(kl) == len(rl)
        rl.extend(ht[:r] if r < len(ht) else ht)
        if synced:  # the released rows' keys as ``sync_keys`` reads them (the run's: ``ks``)
            kl.extend([(t.data.get(OKEY),) for t in ht[:min(r, nheld)]])
            if r > nheld:
                kl.extend(zip(ks[:r - nheld]))
        avail = avail0 + r
        nm = masks_run(rows, avail0 - base, avail - base)
        nnew = r
        p = pos
        s = st
        hi = p  # the rows before ``hi`` were stepped (``p`` is below it while a rescan goes on)
        events = None
        eo = 0  # the run index of the tuple whose step ``events`` belong to
        while p < avail:
            if p < floor or newest >= p:
                esc = 0
            else:
                esc = -1
                i = p - mbase
                if i == len(masks):
                    x = p - avail0
                    if x >= 0:
                        # the tight loop: rows whose fused entry changes nothing but the attempt list
                        if head > newest:
                            head = p
                        x0 = x
                        fresh = not cands and not UNMATCHED
                        while x < nnew:
                            m = nm[x]
                            f = s.fused.get(m) or fuse(s, m)
                            kind = f.kind
                            if kind == 2:
                                tainted.add(x + avail0)
                            elif kind == 0:
                                starts.append(x + avail0)
                            elif kind == 1:
                                pass
                            elif kind >= 5 and fresh:
                                starts = [x + avail0]
                                head = x + avail0
                                if tainted:
                                    tainted.clear()
                                if kind == 6:
                                    tainted.add(x + avail0)
                            else:
                                break
                            s = f.to
                            x += 1
                        if x > x0:
                            masks.extend(nm[x0:x])
                            p = x + avail0
                            newest = p - 1
                            if len(masks) > 8192:
                                keep = min(head, p) - mbase
                                if keep > 4096:
                                    del masks[:keep]
                                    mbase += keep
                            if x == nnew:
                                break
                            i = p - mbase
                        m = nm[x]
                    else:
                        m = MASK_AT(rows, p)
                    masks.append(m)
                    if i > 8192:
                        keep = min(head, p) - mbase
                        if keep > 4096:
                            del masks[:keep]
                            mbase += keep
                elif 0 <= i < len(masks):
                    m = masks[i]
                else:
                    esc = 0
            if esc < 0:
                f = s.fused.get(m) or fuse(s, m)
                kind = f.kind
                if head > newest:
                    head = p
                newest = p
                if kind == 0:
                    s = f.to
                    starts.append(p)
                    p += 1
                    continue
                if kind == 2:
                    s = f.to
                    tainted.add(p)
                    p += 1
                    continue
                if kind == 1:
                    s = f.to
                    p += 1
                    continue
                if kind >= 5 and not cands and not UNMATCHED:
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
                    to, _, shadowed, matched = s.added or auto.add(s)
                    if matched:
                        cands[p] = p
                    if shadowed:
                        tainted.add(p)
                    if len(to.comps) > len(s.comps):
                        starts.append(p)
                    s = to
                    if not starts or starts[0] != head:
                        esc = 1
                    else:
                        p += 1
                        if not s.comps:
                            s = empty
                            continue
                        m &= s.needs
                        edge = s.steps.get(m) or step(s, m)
                        s = edge.to
                        if edge.plain:
                            continue
            if esc >= 0:
                # the runner takes over at row ``p`` (esc 1: resolving the head first) for the step
                # of the tuple that released it, with the row store cut back to that step's rows
                h = (p if p >= hi else hi - 1) - avail0
                o = bisect_left(wms, hk[h], h - nheld if h > nheld else 0) if h >= 0 else 0
                if events and eo != o:
                    sync_keys()
                    steps.append((eo, deliver(part, events, run[eo])))
                    events = None
                cut = avail0 + bisect_right(hk, wms[o], 0, nheld + o + 1) - base
                tail = rl[cut:]
                del rl[cut:]
                if len(kl) > cut:
                    del kl[cut:]
                pos = p
                st = s
                flush()
                more = events or []
                if esc:
                    mt._resolve(more)
                more.extend(mt.advance())
                rl.extend(tail)
                load()
                events = None
                if more:
                    sync_keys()
                    steps.append((o, deliver(part, more, run[o])))
                p = hi = pos
                s = st
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
            # the runner's ``_resolve`` (a rescan goes on in this loop), for the step of the tuple
            # that released the last row stepped
            h = (p if p > hi else hi) - 1 - avail0
            o = bisect_left(wms, hk[h], h - nheld if h > nheld else 0) if h >= 0 else 0
            if events is None:
                events = []
            elif eo != o:
                sync_keys()
                steps.append((eo, deliver(part, events, run[eo])))
                events = []
            eo = o
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
                    if p > hi:
                        hi = p
                    head, newest, p = nxt, nxt - 1, nxt
        pos = p
        st = s
        if events:
            sync_keys()
            steps.append((eo, deliver(part, events, run[eo])))
        if len(rl) > 64:  # forget the rows nothing reads any more (as at the end of ``feed``)
            keep = (head if head <= newest else p) - LOOKBACK - base
            if keep > 64 and keep * 2 >= len(rl):
                sync_keys()
                del rl[:keep]
                del kl[:keep]
                rows.base = base + keep
        return n, steps
"""
