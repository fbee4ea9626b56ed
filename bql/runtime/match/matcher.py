"""The row pattern matcher of one partition: a Pike-VM simulation with priority-ordered threads.

Every row position ``s`` at or after ``floor`` starts a match *attempt*; attempts run side by side,
each holding its threads in preference order (the order a backtracking matcher would try them).
A thread is ``(pc, hist)``: a program counter waiting for the next row and the labels mapped so far
(a linked list ``(parent, var, excluded)``). When a thread reaches MATCH, it becomes the attempt's
candidate and every lower-preference thread is cut; the candidate is final once no preferred thread
is left. The earliest attempt (the head) is resolved first: a final candidate is the match (then the
AFTER MATCH SKIP target becomes the new floor), no candidate and no thread is a failure.

Threads reaching the same ``pc`` at the same position are merged (the preferred one survives) when the
DEFINE conditions allow it: row-local conditions (level 1) merge across attempts too (a later attempt
in the same state can only fail when the earlier one fails; attempts shadowed this way are rescanned
if an earlier attempt succeeds instead), start-dependent ones (level 2) within an attempt, and
label-dependent ones (level 3) only when the labels are identical as well. Level-1 conditions are
evaluated once per row and variable. This keeps ``A+ B+ C+ E`` linear in the number of rows.
"""
from __future__ import annotations

import datetime as _dt
from collections import deque
from typing import Any

from ...errors import BQLError
from .levels import LABEL_DEPENDENT, ROW_LOCAL
from .program import CONSUME, END, JUMP, MATCH, SPLIT, START, static_closures
from .views import Blocked, View


class Attempt:
    __slots__ = ("start", "threads", "match", "tainted")

    def __init__(self, start: int):
        self.start = start
        self.threads: list = []
        self.match: tuple | None = None  # (hist, end)
        self.tainted = False


def hist_list(hist: Any) -> list:
    """The labels ``[(var, excluded), ...]`` of a history, first row first."""
    out = []
    while hist is not None:
        out.append((hist[1], hist[2]))
        hist = hist[0]
    out.reverse()
    return out


def hist_from(labels: list) -> Any:
    hist = None
    for var, excl in labels:
        hist = (hist, var, excl)
    return hist


class MatchSpec:
    """What the matcher needs from the compiled clause."""

    def __init__(self, program: list, conds: dict, level: int, within: float | None,
                 skip_mode: str, skip_var: str | None, sets: dict, ctx: Any):
        self.program = program
        self.conds = conds  # var -> (fn(view) -> value, level, fast row-local fn or None)
        self.level = level
        self.within = within
        self.skip_mode = skip_mode
        self.skip_var = skip_var
        self.sets = sets
        self.ctx = ctx
        self.shared = level == ROW_LOCAL and within is None


class Matcher:
    """Matches one partition's rows (``rows``: ``get``, ``avail``, ``ended``, ``key0``)."""

    def __init__(self, spec: MatchSpec, rows: Any):
        self.spec = spec
        self.rows = rows
        self.prog = spec.program
        self.eps = static_closures(spec.program)
        self.attempts: deque[Attempt] = deque()
        self.pos = 0          # next row to feed
        self.floor = 0        # first row where an attempt may start
        self.covered = 0      # rows before this are part of an emitted match
        self.mno = 0          # matches found so far
        self.visited: dict = {}
        self._cache: dict = {}
        self.live: list[Attempt] = []   # attempts that still have threads, in start order
        self.n_tainted = 0

    # ------------------------------------------------------------ driving

    def advance(self) -> list:
        """Feed every available row; return the resolved events in order:
        ``("match", start, end, labels, mno)``, ``("unmatched", row)``,
        ``("error", start, end, labels, mno, reason)``."""
        events: list = []
        rows = self.rows
        while True:
            p = self.pos
            if p < rows.avail:
                if p >= self.floor and (not self.attempts or self.attempts[-1].start < p):
                    self._new_attempt(p)
                    self._resolve(events)
                    if self.pos != p:
                        continue
                self._step_row(p)
                self.pos = p + 1
                self._resolve(events)
            elif rows.ended and self.attempts:
                self._step_end()
                self._resolve(events)
            else:
                return events

    def min_needed(self) -> int:
        """The first row position the matcher may still read (before PREV look-back)."""
        return self.attempts[0].start if self.attempts else self.pos

    def expire(self, watermark: Any) -> list:
        """WITHIN: end the attempts that started more than the WITHIN span before ``watermark`` (every
        row still to come has a key at or above it, so the next row would end them anyway: their row
        threads go now and a decided head is emitted without waiting for a row of this partition).
        Threads waiting on ``$`` stay (the end of input may still complete them). The resolved events."""
        within = self.spec.within
        prog = self.prog
        changed = False
        for att in self.live:
            if att.threads and self._span_to(att.start, watermark) > within:
                kept = [t for t in att.threads if prog[t[0]][0] == END]
                if len(kept) != len(att.threads):
                    att.threads = kept
                    changed = True
        if not changed:
            return []
        self.live = [a for a in self.live if a.threads]
        events: list = []
        self._resolve(events)
        events.extend(self.advance())
        return events

    # ------------------------------------------------------------ the VM

    def _closure(self, pc: int, hist: Any, pos: int, out: list, vis: dict, att: Attempt) -> bool:
        """Follow the non-consuming instructions from ``pc`` at row position ``pos`` in preference
        order, appending waiting threads to ``out``; True when MATCH is reached (the rest is cut)."""
        prog = self.prog
        start = att.start
        label_dep = self.spec.level == LABEL_DEPENDENT
        hid = id(hist)
        eps = self.eps
        if eps is not None:
            for t in eps[pc]:
                key = (t, hid) if label_dep else t
                seen = vis.get(key)
                if seen is not None:
                    if seen != start:
                        att.tainted = True
                    continue
                vis[key] = start
                if prog[t][0] == MATCH:
                    return True
                out.append((t, hist))
            return False
        stack = [pc]
        while stack:
            pc = stack.pop()
            key = (pc, hid) if label_dep else pc
            seen = vis.get(key)
            if seen is not None:
                if seen != start:
                    att.tainted = True
                continue
            vis[key] = start
            op = prog[pc]
            kind = op[0]
            if kind == CONSUME:
                out.append((pc, hist))
            elif kind == SPLIT:
                stack.append(op[2])
                stack.append(op[1])
            elif kind == JUMP:
                stack.append(op[1])
            elif kind == MATCH:
                return True
            elif kind == START:
                if pos == 0:
                    stack.append(pc + 1)
            elif kind == END:
                rows = self.rows
                if pos >= rows.avail:
                    if rows.ended:
                        stack.append(pc + 1)
                    else:
                        out.append((pc, hist))  # undecided until the next row or the end
        return False

    def _new_attempt(self, s: int) -> None:
        att = Attempt(s)
        vis = self.visited if self.spec.shared else {}
        if self._closure(0, None, s, att.threads, vis, att):
            att.match = (None, s)
        self.attempts.append(att)
        if att.threads:
            self.live.append(att)
        if att.tainted:
            self.n_tainted += 1

    def _step_row(self, p: int) -> None:
        spec = self.spec
        prog = self.prog
        shared = spec.shared
        visited: dict = {}
        self._cache = {}
        within = spec.within
        label_dep = spec.level == LABEL_DEPENDENT
        live = []
        for att in self.live:
            threads = att.threads
            if not threads:
                continue
            was_tainted = att.tainted
            att.threads = new = []
            if within is not None and self._span(att.start, p) > within:
                continue
            vis = visited if shared else {}
            canon: dict = {}
            for pc, hist in threads:
                op = prog[pc]
                if op[0] != CONSUME:
                    continue  # END anchor followed by a row: false
                var = op[1]
                if not self._cond(var, p, att, hist):
                    continue
                if label_dep:
                    ck = (id(hist), var, op[2])
                    nh = canon.get(ck)
                    if nh is None:
                        nh = canon[ck] = (hist, var, op[2])
                else:
                    nh = (hist, var, op[2])
                if self._closure(pc + 1, nh, p + 1, new, vis, att):
                    att.match = (nh, p + 1)
                    break
            if new:
                live.append(att)
            if att.tainted and not was_tainted:
                self.n_tainted += 1
        self.live = live
        self.visited = visited

    def _step_end(self) -> None:
        n = self.rows.avail
        live, self.live = self.live, []
        for att in live:
            threads, att.threads = att.threads, []
            vis: dict = {}
            out: list = []
            for pc, hist in threads:
                if self.prog[pc][0] == END and self._closure(pc + 1, hist, n, out, vis, att):
                    att.match = (hist, n)
                    break
        self.visited = {}

    def _span(self, s: int, p: int) -> float:
        return self._span_to(s, self.rows.key0(p))

    def _span_to(self, s: int, b: Any) -> float:
        """Seconds (key units) from row ``s``'s first ORDER BY key to ``b`` (0 when not comparable)."""
        a = self.rows.key0(s)
        try:
            d = b - a
        except TypeError:
            return 0.0
        if isinstance(d, _dt.timedelta):
            return d.total_seconds()
        return float(d) if isinstance(d, (int, float)) else 0.0

    def _cond(self, var: str, p: int, att: Attempt, hist: Any) -> bool:
        c = self.spec.conds.get(var)
        if c is None:
            return True  # undefined variables match every row
        fn, level, fast = c
        if level == ROW_LOCAL:
            r = self._cache.get(var)
            if r is None:
                if fast is not None:
                    try:
                        r = fast(self.rows, p) is True
                    except (BQLError, Blocked):
                        r = False
                else:
                    r = _truth(fn, View(self.rows, p, [var], p, p, self.mno + 1, self.spec.ctx))
                self._cache[var] = r
            return r
        labels = [v for v, _ in hist_list(hist)]
        labels.append(var)
        return _truth(fn, View(self.rows, att.start, labels, p, p, self.mno + 1, self.spec.ctx))

    # ------------------------------------------------------------ resolution

    def _resolve(self, events: list) -> None:
        attempts = self.attempts
        while attempts:
            att = attempts[0]
            if att.threads:
                return
            self._pop()
            if att.match is None:
                if att.start >= self.covered:
                    events.append(("unmatched", att.start))
                continue
            hist, end = att.match
            labels = hist_list(hist)
            self.mno += 1
            nxt, err = skip_target(self.spec, att.start, end, labels)
            self.covered = max(self.covered, end)
            if err is None:
                events.append(("match", att.start, end, labels, self.mno))
            else:
                events.append(("error", att.start, end, labels, self.mno, err))
                nxt = att.start + 1
            self.floor = nxt
            self.visited = {}  # states of the discarded attempts must not shadow new ones
            while attempts and attempts[0].start < nxt:
                self._pop()
            if nxt < self.pos and self.n_tainted:
                attempts.clear()
                self.live = []
                self.n_tainted = 0
                self.pos = nxt

    def _pop(self) -> None:
        att = self.attempts.popleft()
        if att.tainted:
            self.n_tainted -= 1
        if att.threads and self.live and self.live[0] is att:
            self.live.pop(0)
        elif att.threads:
            self.live.remove(att)

    # ------------------------------------------------------------ snapshot

    def to_state(self) -> dict:
        return {
            "pos": self.pos, "floor": self.floor, "covered": self.covered, "mno": self.mno,
            "visited": dict(self.visited) if self.spec.shared else {},
            "attempts": [
                (a.start, [(pc, hist_list(h)) for pc, h in a.threads],
                 None if a.match is None else (hist_list(a.match[0]), a.match[1]), a.tainted)
                for a in self.attempts
            ],
        }

    def from_state(self, st: dict) -> None:
        self.pos, self.floor, self.covered, self.mno = st["pos"], st["floor"], st["covered"], st["mno"]
        self.visited = dict(st["visited"])
        self.attempts = deque()
        for start, threads, match, tainted in st["attempts"]:
            a = Attempt(start)
            a.threads = [(pc, hist_from(h)) for pc, h in threads]
            a.match = None if match is None else (hist_from(match[0]), match[1])
            a.tainted = tainted
            self.attempts.append(a)
        self.live = [a for a in self.attempts if a.threads]
        self.n_tainted = sum(1 for a in self.attempts if a.tainted)


def skip_target(spec: MatchSpec, start: int, end: int, labels: list) -> tuple[int, str | None]:
    """Where the next attempt starts after the match ``start .. end`` (AFTER MATCH SKIP), and the
    error when the skip is impossible (then matching goes on at ``start + 1``)."""
    mode = spec.skip_mode
    if mode == "past_last_row":
        return (end if end > start else start + 1), None
    if mode == "to_next_row":
        return start + 1, None
    var = spec.skip_var
    members = spec.sets.get(var, frozenset((var,)))
    idxs = [start + i for i, (v, _) in enumerate(labels) if v in members]
    if not idxs:
        return start + 1, f"AFTER MATCH SKIP TO {var}: no row of the match is mapped to {var}"
    target = idxs[0] if mode == "to_first" else idxs[-1]
    if target == start:
        return start + 1, (f"AFTER MATCH SKIP TO {var} would resume at the first row of the match "
                           "(an infinite loop)")
    return target, None


def _truth(fn: Any, view: View) -> bool:
    try:
        return fn(view) is True
    except (BQLError, Blocked):
        return False  # a condition that cannot be evaluated (or needs a future row) is not met
