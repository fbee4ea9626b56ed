"""``EMIT ... AND TIMEOUT t`` and ``EMIT ... AND LAST x [ON PROCTIME]`` (docs/timeplus.md).

``IdleTimeout`` (window aggregations): when no tuple has arrived for ``t`` of wall-clock time (measured
from the processing time of the latest tuple), the next tick closes every open window as if the
watermark had passed them all, whatever the policy does with closed windows (AFTER WATERMARK emits
them, PERIODIC keeps them for its next emission, ON UPDATE emits nothing); the watermark then stands at
the largest end it closed, so a later tuple of one of those windows is late. Proton: "force the window
close, with a timeout after seeing last event"; a query that saw no tuple since the last timeout does
not time out again.

``LastRange`` (global aggregations with a PERIODIC emission): the aggregate reads only the rows of the
last ``x``. With event time (default) a row's time is its tuple timestamp and the range is
``(M - x, M]`` for the largest time ``M`` seen; a tuple at or before ``M - x`` is late and dropped like a
late window tuple. ``ON PROCTIME`` uses the wall clock: a row's time is its processing time and the
range at an emission at ``now`` is ``(now - x, now]``; nothing is late. Rows leave the range just
before each emission (the only moment the aggregate is read), so the groups they leave are emitted as
changed, and a group left without rows disappears without a row. Proton keeps ``max_keep_windows``
sub-windows per group instead of the rows; the result is the same up to the sub-window granularity.
"""
from __future__ import annotations

from typing import Any

from ...ast import EmitClause
from .panes import KeyFn, Pane
from .timecol import interval_micros


class IdleTimeout:
    """The wall-clock deadline after the latest tuple (epoch µs)."""

    __slots__ = ("span", "last_arrival")

    def __init__(self, span: int):
        self.span = span
        self.last_arrival: int | None = None  # None: no tuple since the last timeout

    @classmethod
    def of(cls, emit: EmitClause | None) -> "IdleTimeout | None":
        if emit is None or emit.timeout is None:
            return None
        return cls(interval_micros(emit.timeout))

    def arrived(self, now: int) -> None:
        self.last_arrival = now

    def deadline(self) -> int | None:
        return None if self.last_arrival is None else self.last_arrival + self.span

    def expired(self, now: int) -> bool:
        """Whether a tick at ``now`` times out (once per idle period)."""
        due = self.deadline()
        if due is None or now < due:
            return False
        self.last_arrival = None
        return True


class LastRange:
    """The time of every row of a global aggregation's pane, and the range that keeps them."""

    __slots__ = ("span", "proctime", "times", "newest")

    def __init__(self, span: int, proctime: bool):
        self.span = span
        self.proctime = proctime
        self.times: list[int] = []  # parallel to the pane's rows
        self.newest: int | None = None  # event time: the largest time seen (M)

    @classmethod
    def of(cls, emit: EmitClause | None) -> "LastRange | None":
        if emit is None or emit.last is None:
            return None
        return cls(interval_micros(emit.last), emit.last_proctime)

    def is_late(self, t: int) -> bool:
        """Event time: whether a tuple at ``t`` falls before the range (after accounting for it)."""
        if self.proctime:
            return False
        self.newest = t if self.newest is None or t > self.newest else self.newest
        return t <= self.newest - self.span

    def late_bound(self) -> int:
        return self.newest - self.span

    def added(self, t: int) -> None:
        self.times.append(t)

    def expire(self, pane: Pane | None, now: int, key_fn: KeyFn) -> None:
        """Drop the pane's rows outside the range before an emission at wall-clock ``now``."""
        if pane is None or not self.times:
            return
        bound = (now if self.proctime else self.newest) - self.span
        if min(self.times) > bound:
            return
        keep_rows, keep_times = [], []
        for row, t in zip(pane.rows, self.times):
            if t > bound:
                keep_rows.append(row)
                keep_times.append(t)
            else:
                pane.dirty.add(key_fn(row))
        pane.replace_rows(keep_rows, key_fn)
        self.times = keep_times

    def state(self) -> tuple[list[int], int | None]:
        return list(self.times), self.newest

    def load(self, state: tuple[list[int], Any]) -> None:
        times, self.newest = state
        self.times = list(times)
