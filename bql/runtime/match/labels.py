"""The labels of a match found by the automaton, re-derived by running its one attempt again.

The automaton (``dfa.py``) knows where an attempt's match ends but not which variable each row was
mapped to. This module replays the attempt alone — the matcher's priority-ordered thread list with
histories, over the row masks the automaton used — from its first row to the end of the match: the
first thread (in preference order) that reaches MATCH on the last row holds the labels.

Alone means without the other attempts that could shadow its threads in the shared run. That gives the
same labels whenever the attempt is resolved from that run: a thread of ours is shadowed only at a
``pc`` an earlier attempt already reached at that position; whatever follows from there is reached by
that earlier attempt first as well, so if the earlier attempts all failed (which they did, or ours would
have been dropped or rescanned after their match) the shadowed threads led nowhere, and no preferred
path of ours through them can exist.
"""
from __future__ import annotations

from typing import Any, Callable

from .matcher import hist_list
from .program import CONSUME

MAX_CACHED = 10_000  # replays kept (by mask sequence) before the cache starts over


class Replayer:
    """Replays single attempts of one program (``Automaton``) over ``mask_at(p)``."""

    def __init__(self, automaton: Any):
        program = automaton.program
        self.eps = automaton.eps
        self.bit = automaton.bit
        self.always = automaton.always
        self.match_pc = automaton.match_pc
        self.label = [(op[1], op[2]) if op[0] == CONSUME else None for op in program]
        self.cache: dict[tuple, tuple] = {}

    def _start(self) -> tuple[list, bool]:
        threads: list = []
        for t in self.eps[0]:
            if t == self.match_pc:
                return threads, True
            threads.append((t, None))
        return threads, False

    def _row(self, threads: list, mask: int, cut: bool = True) -> tuple[list, Any]:
        """One row: the new thread list and the history that reached MATCH first (or None); with
        ``cut`` False the threads after it go on (see ``snapshot_threads``)."""
        full = mask | self.always
        bit, eps, label, match_pc = self.bit, self.eps, self.label, self.match_pc
        seen: set = set()
        new: list = []
        hit = None
        for pc, hist in threads:
            if not full & bit[pc]:
                continue
            var, excl = label[pc]
            nh = (hist, var, excl)
            for t in eps[pc + 1]:
                if t in seen:
                    continue
                seen.add(t)
                if t == match_pc:
                    if cut:
                        return new, nh
                    hit = nh if hit is None else hit
                    break
                new.append((t, nh))
        return new, hit

    def labels(self, start: int, end: int, mask_at: Callable[[int], int]) -> tuple:
        """``[(var, excluded), ...]`` of the attempt at ``start`` whose match ends before ``end``."""
        return self.labels_of(tuple(map(mask_at, range(start, end))))

    def labels_of(self, key: tuple) -> tuple:
        """The labels of a match over rows with masks ``key``: they depend on nothing else, so
        replays are cached by it (the same tuple for every match with these masks, which lets
        ``fastpath.OneRowMeasures`` cache what it finds in it)."""
        labels = self.cache.get(key)
        if labels is None:
            labels = self._replay(key)
            if len(self.cache) >= MAX_CACHED:
                self.cache.clear()
            self.cache[key] = labels
        return labels

    def _replay(self, masks: tuple) -> tuple:
        threads, _ = self._start()
        if not masks:
            return ()
        hit = None
        for mask in masks:
            threads, hit = self._row(threads, mask)
        if hit is None:
            raise AssertionError(f"the replay of an attempt over masks {masks} found no match at their end")
        return tuple(hist_list(hit))

    def snapshot_threads(self, start: int, upto: int, pcs: tuple, end: int | None,
                         mask_at: Callable[[int], int]) -> tuple[list, list | None]:
        """The matcher's view of an unresolved attempt for a snapshot: ``[(pc, labels)]`` of its
        threads ``pcs`` waiting at ``upto`` and the labels of its candidate match ending at ``end``.

        Labels of the attempt alone (as ``labels``). A thread or candidate the lone attempt does not
        have — it would have been cut by a MATCH of ours that an earlier attempt's MATCH shadowed — takes
        the labels of the replay without cuts: such an attempt is tainted and an earlier one will match
        before it, so it is dropped or rescanned and these labels are never read."""
        replays = []
        for cut in (True, False):
            threads, _ = self._start()
            candidate = None
            for p in range(start, upto):
                threads, hit = self._row(threads, mask_at(p), cut)
                if p + 1 == end:
                    candidate = hit
            replays.append(({pc: hist for pc, hist in reversed(threads)}, candidate))
        (found, cand), (loose, loose_cand) = replays
        out = [(pc, hist_list(found[pc] if pc in found else loose.get(pc))) for pc in pcs]
        if end is None:
            return out, None
        if end == start:
            return out, []
        return out, hist_list(cand if cand is not None else loose_cand)
