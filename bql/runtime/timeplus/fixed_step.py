"""The step of the most common Timeplus aggregation, without the branches that cannot apply to it.

A tumble, hop or session aggregation whose groups are aggregate columns (``pane_columns``), emitted
AFTER WATERMARK (no timeout), over event time (the tuple's own or a time column's, not ``now64()``),
without LIMIT / OFFSET, runs ``_fixed_step``
instead of the general ``process``: the same watermark, late check, assignment and closing, in the same
order, with the same texts. The wall clock is read only when an expression can read ``now()``.
"""
from __future__ import annotations

from typing import Any

from ...ast import Select
from ...eval import is_volatile
from ..incremental.field_access import MISSING
from ..kernel import _message
from ..processor import Dropped, StepResult, Tuple
from .emission import AFTER_WATERMARK
from .timecol import datetime_micros, to_micros
from .watermark import late_error


def fixed_step_of(proc: Any, select: Select, registry: Any) -> tuple[bool, bool]:
    """``(fixed_step, clocked)`` of a ``WindowProcessor`` built from ``select``."""
    fixed = (proc.columns is not None and (proc.fixed is not None or proc.sessions is not None)
             and proc.policy.kind == AFTER_WATERMARK and proc.timeout is None and not proc.proctime
             and select.limit is None and select.offset is None)
    return fixed, (not fixed) or is_volatile(select, registry) or (  # else nothing reads ``now()``
        proc.time_expr is not None and is_volatile(proc.time_expr, registry))


class FixedStep:
    """``WindowProcessor._fixed_step`` (a mixin: it runs on the processor's own state)."""

    # ``(threshold, threshold + slide)``: the late threshold last computed, which holds for close bounds
    # in that range (the end of the last grid window a close bound closed stays that end until the next)
    _late: tuple[int, int] = (0, 0)

    def _fixed_step(self: Any, tup: Tuple) -> StepResult:
        """``process`` for a tumble, hop or session aggregation with column panes, AFTER WATERMARK over event
        time and no LIMIT: the same steps without the branches that cannot apply."""
        result = StepResult()
        if self.finished:
            return result
        if self.clocked:
            self._now = self.clock()
        ts = tup.ts
        self.last = (ts, tup.seq)
        try:
            if self.time_fn is None:
                t = datetime_micros(ts)
            else:  # a plain field read inline (``field_access``); when missing, the closure raises its error
                data = tup.data
                v = data.get(self.time_field, MISSING) if self.time_field is not None and type(data) is dict \
                    else MISSING
                t = to_micros(self.time_fn(self._env(tup)) if v is MISSING else v)
            watermark = self.watermark
            mx = watermark.max_time
            if mx is None or t > mx:
                watermark.max_time = mx = t
            fixed = self.fixed
            c = mx - watermark.delay  # ``watermark.close_bound``
            if fixed is None:  # a session: late below the close bound itself
                if t < c:
                    result.dropped.append(Dropped(tup, late_error(t, c), "input"))
                    return result
                self._assign_session(tup, t)
            else:
                late = self._late
                if not late[0] <= c < late[1]:
                    threshold = watermark.late_threshold()  # ``fixed.closed_end(c)``
                    late = self._late = (threshold, threshold + fixed.slide)
                if t < late[0]:
                    result.dropped.append(Dropped(tup, late_error(t, late[0]), "input"))
                    return result
                if self.columns.tag_rows:
                    self._assign_fixed(tup, t)
                elif fixed.slide == fixed.size:  # tumble: one window
                    start = ((t - fixed.origin) // fixed.size) * fixed.size + fixed.origin
                    self._add_windows(tup, ((start, start + fixed.size),))
                else:
                    self._add_windows(tup, fixed.windows_for(t))
            ends = self.ends
            if ends and ends[0][0] <= c:
                self._close((ts, tup.seq), result)
        except Exception as err:  # per-tuple isolation: fallible work happens before state changes
            result.dropped.append(Dropped(tup, _message(err), "other"))
        return result

    def _add_windows(self: Any, tup: Tuple, bounds: Any) -> None:
        """``_assign_fixed`` of a tuple in the windows ``bounds`` (untagged column rows): WHERE and the
        key per window first (what can raise), then the rows join their groups."""
        cols, env, where = self.columns, self._env, self.where
        plan = []
        for start, end in bounds:
            if where is None or self._passes(tup):
                plan.append((start, end, cols.key(tup, start, end, env)))
        for start, end, key in plan:
            cols.add(self._fixed_pane(start, end), key, tup, start, end, env)
