"""The step of the most common Timeplus aggregation, without the branches that cannot apply to it.

A tumble or hop aggregation whose groups are aggregate columns (``pane_columns``), emitted AFTER
WATERMARK (no timeout), over the tuple's own time, without LIMIT / OFFSET, runs ``_fixed_step`` instead
of the general ``process``: the same watermark, late check, assignment and closing, in the same order,
with the same texts. The wall clock is read only when an expression can read ``now()``.
"""
from __future__ import annotations

from typing import Any

from ...ast import Select
from ...eval import is_volatile
from ..kernel import _message
from ..processor import Dropped, StepResult, Tuple
from .emission import AFTER_WATERMARK
from .timecol import datetime_micros
from .watermark import late_error


def fixed_step_of(proc: Any, select: Select, registry: Any) -> tuple[bool, bool]:
    """``(fixed_step, clocked)`` of a ``WindowProcessor`` built from ``select``."""
    fixed = (proc.columns is not None and proc.fixed is not None and proc.policy.kind == AFTER_WATERMARK
             and proc.timeout is None and proc.time_fn is None and select.limit is None and select.offset is None)
    return fixed, (not fixed) or is_volatile(select, registry)  # else nothing reads ``now()``


class FixedStep:
    """``WindowProcessor._fixed_step`` (a mixin: it runs on the processor's own state)."""

    def _fixed_step(self: Any, tup: Tuple) -> StepResult:
        """``process`` for a tumble/hop aggregation with column panes, AFTER WATERMARK over the tuple's
        time and no LIMIT: the same steps without the branches that cannot apply."""
        result = StepResult()
        if self.finished:
            return result
        if self.clocked:
            self._now = self.clock()
        ts = tup.ts
        self.last = (ts, tup.seq)
        try:
            t = datetime_micros(ts)
            watermark = self.watermark
            watermark.observe(t)
            threshold = watermark.late_threshold()
            if t < threshold:
                result.dropped.append(Dropped(tup, late_error(t, threshold), "input"))
                return result
            self._assign_fixed(tup, t)
            if self.ends and self.ends[0][0] <= watermark.close_bound:
                self._close((ts, tup.seq), result)
        except Exception as err:  # per-tuple isolation: fallible work happens before state changes
            result.dropped.append(Dropped(tup, _message(err), "other"))
        return result
