"""The wall clock of the Timeplus window operator: ``tick``, ``next_tick`` and ``tick_period``.

A running topology asks a processor when to tick (``next_tick``) and at which period (``tick_period``,
known when it is built), and calls ``tick(now)`` with the micro-batch's processing time (see
docs/architecture.md, "Wall-clock ticks"). Two things are driven by it:

- ``EMIT PERIODIC n [REPEAT]`` (``emission.EmitPolicy``): at a due period boundary the changed (REPEAT:
  all) groups of the open panes and of the panes closed since the previous emission are emitted; with
  ``AND LAST x`` the rows that left the range go first (``emit_extras.LastRange``).
- ``AND TIMEOUT t`` (``emit_extras.IdleTimeout``): ``t`` after the latest tuple every open window closes.
- Processing-time windows (``tumble(s, now64(), 5s)``): the wall clock is their event time, so a tick at
  ``now`` advances the watermark to ``now`` and closes every window with ``end <= now - delay`` even when
  no tuple arrives; ``next_tick`` is the earliest such close while a window is open.

``WallClock`` is a mixin of ``processor.WindowProcessor`` and reads its state directly.
"""
from __future__ import annotations

import datetime as _dt
import math

from ..processor import StepResult
from .emission import PERIODIC
from .timecol import EPOCH, datetime_micros, micros_datetime


class WallClock:
    """The tick methods of ``WindowProcessor``."""

    def tick(self, now: _dt.datetime) -> StepResult:
        result = StepResult()
        if self.grouping is None or self.done or self.finished:
            result.done = self.done
            return result
        now_us = datetime_micros(now)
        self._now = now
        cause = (now, self.last[1] if self.last else 0)
        if self.timeout is not None and self.timeout.expired(now_us):
            self._close_all(cause, result)
        if self.proctime:
            self.watermark.observe(now_us)
            self._close(cause, result)
        if self.policy.due(now_us):
            self._expire_last_range()
            panes = list(self.panes.values()) + self.pending
            requests = self.policy.periodic_requests(panes, self._key)
            self._emit(requests, cause, result)
            for pane in panes:
                pane.clear_dirty()
            self.pending = []
        result.done = self.done
        return result

    def next_tick(self) -> _dt.datetime | None:
        """When ``tick`` next emits: the next period boundary (``EPOCH``, i.e. at once, before the
        first tick) while a tick would emit something; None for other policies, non-aggregating
        queries, a finished query, or when nothing changed since the last emission (no REPEAT)."""
        if self.grouping is None or self.done or self.finished:
            return None
        candidates = []
        if self.policy.kind == PERIODIC:
            sliding = self.last_range is not None and self.last_range.proctime and self.last_range.times
            if sliding or self.policy.has_output(list(self.panes.values()) + self.pending):
                due = self.policy.next_due
                candidates.append(EPOCH if due is None else micros_datetime(due))
        if self.timeout is not None and self.panes and self.timeout.deadline() is not None:
            candidates.append(micros_datetime(self.timeout.deadline()))
        if self.proctime and self.panes:
            ends = [p.end for p in self.panes.values() if p.end is not None]
            if ends:
                candidates.append(micros_datetime(min(ends) + self.policy.delay))
        return min(candidates) if candidates else None

    def tick_period(self) -> _dt.timedelta | None:
        """The wall-clock period of an aggregating query: ``EMIT PERIODIC n`` → n, ``AND TIMEOUT t`` → t,
        processing-time windows → the gcd of their intervals and delay (several: the gcd of all); None
        when it needs no ticks."""
        if self.grouping is None:
            return None
        periods = [self.policy.period] if self.policy.kind == PERIODIC else []
        if self.timeout is not None:
            periods.append(self.timeout.span)
        if self.proctime:
            periods.extend(self.window_spans())
        return _dt.timedelta(microseconds=math.gcd(*periods)) if periods else None

    def window_spans(self) -> list[int]:
        """The intervals (µs) a processing-time window closes on: the grid's slide, size and origin, or
        the session gap and max, and the delay; ticks at their gcd land on every possible close."""
        spans = []
        if self.fixed is not None:
            spans += [self.fixed.slide, self.fixed.size] + ([self.fixed.origin] if self.fixed.origin else [])
        if self.sessions is not None:
            spans += [self.sessions.gap, self.sessions.longest]
        if self.policy.delay:
            spans.append(self.policy.delay)
        return spans

    def _close_all(self, cause: tuple[_dt.datetime, int], result: StepResult) -> None:
        """EMIT ... AND TIMEOUT: close every open window; the watermark moves to the largest end."""
        ends = [p.end for p in self.panes.values() if p.end is not None]
        if not ends:
            return
        self.watermark.observe(max(ends) + self.policy.delay)
        self._close(cause, result)

    def _expire_last_range(self) -> None:
        if self.last_range is not None and self.global_pid is not None:
            self.last_range.expire(self.panes[self.global_pid], datetime_micros(self._now), self._key)
