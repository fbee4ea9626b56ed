"""``AutomatonMatcher``: the matcher of one partition driven by the deterministic automaton.

It is the ``Matcher`` algorithm (``matcher.py``) step for step — an attempt at every row from
``floor``, the earliest attempt resolved first once it has no threads, AFTER MATCH SKIP moving
``floor``, a rescan from the skip target when a resolved match leaves shadowed (tainted) attempts
behind — with the thread lists replaced by automaton states (``dfa.py``), the DEFINE conditions by one
row mask per row (``conditions.py``, each row evaluated once and its mask kept for the replay), and the
histories by a replay of the matched attempt (``labels.py``).

The unresolved attempts are always the consecutive starts ``head .. newest``: the live ones (those
with threads, ``starts`` in the order of ``state.comps``), the others waiting to become the head with
their candidate match end (``cands``) or none. Snapshots use the ``Matcher``'s format (thread
histories replayed), so a snapshot restores into either engine.
"""
from __future__ import annotations

from typing import Any

from .dfa import Automaton
from .labels import Replayer
from .matcher import skip_target


class AutomatonMatcher:
    """Matches one partition's rows (``rows``: ``get``, ``avail``, ``ended``, ``rows``, ``base``)."""

    def __init__(self, spec: Any, automaton: Automaton, mask_at: Any, replayer: Replayer, rows: Any,
                 report_unmatched: bool = True):
        """``report_unmatched`` False: no ``("unmatched", row)`` events (when nothing renders them)."""
        self.spec = spec
        self.report_unmatched = report_unmatched
        self.auto = automaton
        self.mask_fn = mask_at
        self.replayer = replayer
        self.rows = rows
        self.state = automaton.empty
        self.starts: list[int] = []
        self.cands: dict[int, int] = {}
        self.tainted: set[int] = set()
        self.head = 0
        self.newest = -1
        self.pos = 0
        self.floor = 0
        self.covered = 0
        self.mno = 0
        self.masks: list[int] = []
        self.mbase = 0

    # ------------------------------------------------------------ driving

    def advance(self) -> list:
        """Feed every available row; the resolved events in order (as ``Matcher.advance``).

        Each row: an attempt at it from ``floor``, its mask through the automaton, the head resolved
        whenever it has no threads left. The usual cases run on local copies of the fields (written
        back before anything else is called); the rest goes through ``_new_attempt`` / ``_resolve``."""
        events: list = []
        rows = self.rows
        auto, mask_fn, masks = self.auto, self.mask_fn, self.masks
        empty = auto.empty
        avail = rows.base + len(rows.rows)
        p, st, starts = self.pos, self.state, self.starts
        while p < avail:
            if p >= self.floor and self.newest < p:
                added = st.added or auto.add(st)
                if added[1]:  # the usual case: a live, unshadowed attempt
                    if self.head > self.newest:
                        self.head = p
                    self.newest = p
                    starts.append(p)
                    st = added[0]
                else:
                    self.pos, self.state, self.starts = p, st, starts
                    self._new_attempt(p)
                    if not self.starts or self.starts[0] != self.head:
                        self._resolve(events)
                    st, starts = self.state, self.starts
                    if self.pos != p:  # a rescan
                        p = self.pos
                        continue
            p += 1
            if not st.comps:
                st = empty
                continue
            i = p - 1 - self.mbase
            if i == len(masks):
                m = mask_fn(rows, p - 1)
                masks.append(m)
                if i > 8192:
                    self._trim_masks(p - 1)
            elif 0 <= i < len(masks):
                m = masks[i]  # a rescan
            else:
                m = mask_fn(rows, p - 1)
                if i > 0:  # rows without live attempts were skipped: start the store here
                    masks[:] = [m]
                    self.mbase = p - 1
            m &= st.needs
            edge = st.steps.get(m) or auto.step(st, m)
            st = edge.to
            if edge.plain:
                continue
            if edge.cand:
                for k in edge.cand:
                    self.cands[starts[k]] = p
            if edge.taint:
                for k in edge.taint:
                    self.tainted.add(starts[k])
            if edge.lo >= 0:
                starts = starts[edge.lo:edge.hi]
            else:
                starts = [starts[k] for k in edge.keep]
            if not edge.head_left:
                continue
            # heads without threads: failed attempts leave at once unless reported or tainted
            head, newest = self.head, self.newest
            cands, tainted = self.cands, self.tainted
            while head not in cands and not (self.report_unmatched and head >= self.covered):
                if tainted:
                    tainted.discard(head)
                head += 1
                if head > newest or (starts and starts[0] == head):
                    break
            self.head = head
            if head <= newest and not (starts and starts[0] == head):
                self.pos, self.state, self.starts = p, st, starts
                self._resolve(events)
                p, st, starts = self.pos, self.state, self.starts
        self.pos, self.state, self.starts = p, st, starts
        if rows.ended and self.head <= self.newest:
            self.state = empty  # no thread waits on an anchor: every attempt ends
            self.starts = []
            self._resolve(events)
            if self.pos < avail:  # a rescan
                events.extend(self.advance())
        return events

    def min_needed(self) -> int:
        """The first row position the matcher may still read (before PREV look-back)."""
        return self.head if self.head <= self.newest else self.pos

    # ------------------------------------------------------------ masks

    def mask_at(self, p: int) -> int:
        """The mask of row ``p``: kept from when it was stepped, else computed again (the conditions
        read only rows from ``p`` back to the look-back, all still kept)."""
        i = p - self.mbase
        if 0 <= i < len(self.masks):
            return self.masks[i]
        return self.mask_fn(self.rows, p)

    def _trim_masks(self, p: int) -> None:
        keep = min(self.head, p) - self.mbase
        if keep > 4096:
            del self.masks[:keep]
            self.mbase += keep

    # ------------------------------------------------------------ attempts

    def _new_attempt(self, p: int) -> None:
        st = self.state
        to, _, tainted, matched = self.auto.add(st)
        if self.head > self.newest:
            self.head = p  # no unresolved attempt: this one is the head
        self.newest = p
        if matched:
            self.cands[p] = p
        if tainted:
            self.tainted.add(p)
        if len(to.comps) > len(st.comps):
            self.starts.append(p)
        self.state = to

    def _resolve(self, events: list) -> None:
        while self.head <= self.newest:
            s = self.head
            if self.starts and self.starts[0] == s:
                return
            self.head = s + 1
            self.tainted.discard(s)
            end = self.cands.pop(s, None)
            if end is None:
                if s >= self.covered and self.report_unmatched:
                    events.append(("unmatched", s))
                continue
            i, j = s - self.mbase, end - self.mbase
            if 0 <= i and j <= len(self.masks):
                labels = self.replayer.labels_of(tuple(self.masks[i:j]))
            else:
                labels = self.replayer.labels(s, end, self.mask_at)
            self.mno += 1
            nxt, err = skip_target(self.spec, s, end, labels)
            if end > self.covered:
                self.covered = end
            if err is None:
                events.append(("match", s, end, labels, self.mno))
            else:
                events.append(("error", s, end, labels, self.mno, err))
                nxt = s + 1
            self.floor = nxt
            starts = self.starts
            k = 0
            while k < len(starts) and starts[k] < nxt:
                k += 1
            st = self.state
            self.state = st.cleared.get(k) or self.auto.clear(st, k)
            if k:
                del starts[:k]
            if nxt > self.head:
                self.head = nxt
                if self.cands:
                    self.cands = {a: e for a, e in self.cands.items() if a >= nxt}
                if self.tainted:
                    self.tainted = {a for a in self.tainted if a >= nxt}
            if nxt < self.pos and self.tainted:
                self.state = self.auto.empty
                self.starts = []
                self.cands = {}
                self.tainted = set()
                self.head, self.newest, self.pos = nxt, nxt - 1, nxt

    # ------------------------------------------------------------ snapshot (the Matcher's format)

    def to_state(self) -> dict:
        live = dict(zip(self.starts, self.state.comps))
        owners: dict = {}
        for s, comp in zip(self.starts, self.state.comps):
            for pc in comp:
                owners.setdefault(pc, s)
        attempts = []
        for s in range(self.head, self.newest + 1):
            end = self.cands.get(s)
            threads, labels = self.replayer.snapshot_threads(s, self.pos, live.get(s, ()), end, self.mask_at)
            attempts.append((s, threads, None if end is None else (labels, end), s in self.tainted))
            if end == self.pos:
                owners.setdefault(self.auto.match_pc, s)
        visited = {pc: owners.get(pc, -1) for pc in self.state.vis}
        return {"pos": self.pos, "floor": self.floor, "covered": self.covered, "mno": self.mno,
                "visited": visited, "attempts": attempts}

    def from_state(self, st: dict) -> None:
        self.pos, self.floor, self.covered, self.mno = st["pos"], st["floor"], st["covered"], st["mno"]
        attempts = st["attempts"]
        self.starts = [a[0] for a in attempts if a[1]]
        comps = tuple(tuple(pc for pc, _ in a[1]) for a in attempts if a[1])
        self.state = self.auto.state(comps, frozenset(st["visited"]))
        self.cands = {a[0]: a[2][1] for a in attempts if a[2] is not None}
        self.tainted = {a[0] for a in attempts if a[3]}
        if attempts:
            self.head, self.newest = attempts[0][0], attempts[-1][0]
        else:
            self.head, self.newest = self.pos, self.pos - 1
        self.masks.clear()
        self.mbase = self.pos
