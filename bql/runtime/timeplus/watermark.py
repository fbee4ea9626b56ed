"""The query watermark and the late rule (design rule 1, 2 and 5).

``M`` is the largest event time seen by the query over all its tuples (FROM is evaluated before WHERE,
so tuples the WHERE clause drops still advance it); ``C = M - delay`` closes every window whose end is
``<= C``. A tuple is late when its time is below the *aligned* watermark for tumble/hop (the end of the
last window ``C`` closed) and below ``C`` itself for sessions. A late tuple changes nothing.
"""
from __future__ import annotations

from collections.abc import Callable

from .timecol import bound_value


def late_error(t: int, threshold: int) -> str:
    """The ``dropped_tuples`` text of a tuple at ``t`` below the late ``threshold``."""
    return (f"late tuple: its window time {bound_value(t)} is before the watermark "
            f"{bound_value(threshold)}; its window(s) already closed")


class Watermark:
    """Max event time and delay, in epoch microseconds."""

    __slots__ = ("delay", "max_time", "align")

    def __init__(self, delay: int = 0, align: Callable[[int], int] | None = None):
        self.delay = delay
        self.max_time: int | None = None
        self.align = align  # C -> late threshold (tumble/hop: closed_end); None = C itself (session)

    def observe(self, t: int) -> None:
        """Account for one arriving event time (before WHERE)."""
        if self.max_time is None or t > self.max_time:
            self.max_time = t

    @property
    def close_bound(self) -> int | None:
        """``C = M - delay``: windows with ``end <= C`` close; None before the first tuple."""
        return None if self.max_time is None else self.max_time - self.delay

    def late_threshold(self) -> int | None:
        c = self.close_bound
        if c is None:
            return None
        return self.align(c) if self.align is not None else c

    def is_late(self, t: int) -> bool:
        """Whether a tuple at ``t`` belongs only to windows the watermark has already closed."""
        threshold = self.late_threshold()
        return threshold is not None and t < threshold

    def state(self) -> tuple[int | None]:
        return (self.max_time,)

    def load(self, state: tuple[int | None]) -> None:
        (self.max_time,) = state
