"""The step of the most common Timeplus aggregation, without the branches that cannot apply to it.

A tumble, hop or session aggregation whose groups are aggregate columns (``pane_columns``), emitted
AFTER WATERMARK (no timeout), over event time (the tuple's own or a time column's, not ``now64()``),
without LIMIT / OFFSET, runs ``_fixed_step`` instead of the general ``process``: the same watermark, late
check, assignment and closing, in the same order, with the same texts. The wall clock is read only when
an expression can read ``now()``.

A tumble/hop row that is not tagged (nothing reads a window column) is the same row in each of its
windows, and when neither WHERE nor a GROUP BY item is volatile (or there is one window) so are its
WHERE and the key's other items (``shared_windows``): the step evaluates them once and adds the row to
all its windows in one call (``column_steps``' ``add_to_windows``). Consecutive rows mostly fall in the
same windows: the first row of a range of times that has exactly the same windows goes through
``_assign_fixed`` (per window, as ``process``), then those windows' entries (panes and window key parts)
are kept for the next rows of the range. An entry's pane cannot have closed while a row in that range
is not late: a closed pane's end is at most the late threshold.

A session row that is not tagged (``session_rows``) computes its session key with the layout's generated
``session_key`` (plain fields read inline, the environment built only for a closure) and joins or opens
its key's session without the ``Placement`` of the general ``_assign_session``: the same rules, checks
and state changes, in the same order.
"""
from __future__ import annotations

import heapq
from typing import Any

from ...ast import Select
from ...eval import is_volatile
from ...values import multiset_key
from ..kernel import _message
from ..processor import NOTHING, Dropped, StepResult, Tuple, each_of
from .emission import AFTER_WATERMARK
from .timecol import bound_value, datetime_micros
from .watermark import late_error


def fixed_step_of(proc: Any, select: Select, registry: Any) -> tuple[bool, bool, bool, bool]:
    """``(fixed_step, clocked, shared_windows, session_rows)`` of a ``WindowProcessor`` built from
    ``select``; ``shared_windows``: a tumble/hop fixed step adds untagged rows to all their windows at
    once; ``session_rows``: a session fixed step joins untagged rows with ``_join_session`` (module
    docstring)."""
    fixed = (proc.columns is not None and (proc.fixed is not None or proc.sessions is not None)
             and proc.policy.kind == AFTER_WATERMARK and proc.timeout is None and not proc.proctime
             and select.limit is None and select.offset is None)
    clocked = (not fixed) or is_volatile(select, registry) or (  # else nothing reads ``now()``
        proc.time_expr is not None and is_volatile(proc.time_expr, registry))
    windows = proc.fixed
    shared = (fixed and windows is not None and not proc.columns.tag_rows and windows.slide <= windows.size
              and (windows.slide == windows.size or not any(  # one WHERE and key per row gives each window's
                  e is not None and is_volatile(e, registry) for e in (select.where, *select.group_by))))
    cols = proc.columns
    session_rows = (fixed and proc.sessions is not None and not cols.tag_rows  # the session key's items are
                    and sum(part[0] != "w" for part in cols.key_parts) == len(proc.session_keys))  # the same
    return fixed, clocked, shared, session_rows


class FixedStep:
    """``WindowProcessor._fixed_step`` (a mixin: it runs on the processor's own state)."""

    # ``(threshold, threshold + slide)``: the late threshold last computed, which holds for close bounds
    # in that range (the end of the last grid window a close bound closed stays that end until the next)
    _late: tuple[int, int] = (0, 0)
    # ``(lo, hi, windows, panes)``: a row at ``lo <= t < hi`` is in exactly the windows ``windows``
    # (``add_to_windows``' entries), which hold while ``panes`` is the processor's pane map (a restore or
    # the end of input replaces it)
    _slot: tuple[int, int, tuple, Any] = (0, 0, (), None)

    def batch_entry(self: Any) -> Any:
        """``process_batch`` where the fixed step runs (``Processor.batch_entry``), else None."""
        return self.process_batch if self.fixed_step else None

    def process_batch(self: Any, input_name: str, tuples: list[Tuple]) -> list[Any]:
        """``process`` over a batch (``Processor.process_batch``'s entries): the fixed step per tuple (it
        reports a failing row as dropped and never raises; it never finishes the query), without the host's
        call and checks around each."""
        if not self.fixed_step:
            return each_of(self, tuples)
        step = self._fixed_step
        return [None if (result := step(tup)) is NOTHING else result for tup in tuples]

    def _fixed_step(self: Any, tup: Tuple) -> StepResult:
        """``process`` for a tumble, hop or session aggregation with column panes, AFTER WATERMARK over event
        time and no LIMIT: the same steps without the branches that cannot apply. A row that neither
        drops nor closes a window returns the shared empty ``NOTHING``."""
        if self.finished:
            return StepResult()
        result = None
        if self.clocked:
            self._now = self.clock()
        ts = tup.ts
        self.last = (ts, tup.seq)
        try:
            t = datetime_micros(ts) if self.time_fn is None else self._time(tup)
            watermark = self.watermark
            mx = watermark.max_time
            if mx is None or t > mx:
                watermark.max_time = mx = t
            fixed = self.fixed
            c = mx - watermark.delay  # ``watermark.close_bound``
            if fixed is None:  # a session: late below the close bound itself
                if t < c:
                    return StepResult([], [Dropped(tup, late_error(t, c), "input")])
                if self.session_rows:
                    self._join_session(tup, t)
                else:
                    self._assign_session(tup, t)
            else:
                late = self._late
                if not late[0] <= c < late[1]:
                    threshold = watermark.late_threshold()  # ``fixed.closed_end(c)``
                    late = self._late = (threshold, threshold + fixed.slide)
                if t < late[0]:
                    return StepResult([], [Dropped(tup, late_error(t, late[0]), "input")])
                lo, hi, windows, panes = self._slot
                if not (self.shared_windows and lo <= t < hi and panes is self.panes):
                    self._assign_fixed(tup, t)  # per window, as ``process`` does it
                    if self.shared_windows:
                        self._keep_windows(t)
                elif self.where is None or self._passes(tup):
                    self.columns.add_to_windows(windows, tup, self._env)
            ends = self.ends
            if ends and ends[0][0] <= c:
                result = StepResult()
                self._close((ts, tup.seq), result)
        except Exception as err:  # per-tuple isolation: fallible work happens before state changes
            if result is None:
                result = StepResult()
            result.dropped.append(Dropped(tup, _message(err), "other"))
        return NOTHING if result is None else result

    def _join_session(self: Any, tup: Tuple, t: int) -> None:
        """``_assign_session`` for an untagged row (module docstring): the row joins its key's newest session
        when ``t < last + gap`` and ``t < start + max``, else opens one; WHERE is evaluated before any state
        changes, and a raising key or WHERE drops the row."""
        cols, sessions = self.columns, self.sessions
        skey = cols.session_key(tup, self._env)
        current = sessions.newest.get(skey)
        if current is not None:
            pid, start, last = current
            if t < last + sessions.gap and t < start + sessions.longest:
                if self.where is not None and not self._passes(tup):
                    return
                if t < start:
                    start = t
                elif t > last:
                    last = t
                end = sessions.end_of(start, last)
                pane = self.panes[pid]
                if end < pane.end:  # a later end keeps its entry in ``ends`` (``_close`` moves it)
                    heapq.heappush(self.ends, (end, pid))
                pane.set_bounds(start, end)
                pane.last = last
                cols.add_session(pane, tup, self._env)
                sessions.newest[skey] = (pid, start, last)
                return
        if self.where is not None and not self._passes(tup):
            return
        pane = self._new_pane(t, sessions.end_of(t, t), skey=skey, last=t)
        cols.add_session(pane, tup, self._env)
        sessions.newest[skey] = (pane.pid, t, t)

    def _keep_windows(self: Any, t: int) -> None:
        """After a row at ``t`` joined its windows: their ``add_to_windows`` entries, kept in ``_slot`` for
        the next rows (not when WHERE rejected the row: a window may have no pane yet)."""
        fixed = self.fixed
        bounds = fixed.windows_for(t)  # not empty: the slide is at most the size
        pids = [self.by_bounds.get(bound) for bound in bounds]
        if None in pids:
            return
        windows = tuple((self.panes[pid], start, end, multiset_key(bound_value(start)),
                         multiset_key(bound_value(end))) for pid, (start, end) in zip(pids, bounds))
        first, last = bounds[0][0], bounds[-1][0]
        # the times in these windows and in no other: from the last start and the end of the window before
        # the first, to the next start and the first end
        lo, hi = max(last, first - fixed.slide + fixed.size), min(last + fixed.slide, first + fixed.size)
        self._slot = (lo, hi, windows, self.panes)
