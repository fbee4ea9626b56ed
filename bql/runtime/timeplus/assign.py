"""Window assignment for ``tumble`` and ``hop``: epoch-aligned ``[start, end)`` windows.

A hop window starts at every multiple of *slide* and lasts *size*; a tumble window is a hop whose slide
equals its size. All values are epoch microseconds (``timecol``). ``closed_end(C)`` is the end of the
last grid window that a watermark ``C`` has closed (the largest grid end ``<= C``): it is the aligned
late threshold of design rule 2 (Proton's watermark), so a hop tuple older than it is dropped from all
of its windows even when some of them are still open.

The grid starts at the epoch, except for windows whose intervals are all written in weeks (``1w``):
those start on Mondays 00:00 UTC, as Proton's week intervals do (1970-01-01 was a Thursday, so the
grid origin is 1970-01-05); ``7d`` stays epoch-aligned, as in Proton (docs/timeplus.md).
"""
from __future__ import annotations

from ...ast import WindowFunction
from .timecol import US, interval_micros

MONDAY = 4 * 86400 * US  # 1970-01-05T00:00:00Z, the origin of week-sized windows


class FixedWindows:
    """The window grid of one ``tumble(...)`` / ``hop(...)`` FROM item."""

    __slots__ = ("slide", "size", "origin")

    def __init__(self, slide: int, size: int, origin: int = 0):
        if slide <= 0 or size <= 0:
            raise ValueError("window intervals must be positive")
        self.slide = slide
        self.size = size
        self.origin = origin

    @classmethod
    def of(cls, wf: WindowFunction) -> "FixedWindows":
        kind = wf.kind.lower()
        weekly = all(iv.shorthand is not None and iv.shorthand.endswith("w") for iv in wf.intervals)
        origin = MONDAY if weekly else 0
        if kind == "tumble":
            size = interval_micros(wf.intervals[0])
            return cls(size, size, origin)
        if kind == "hop":
            slide, size = (interval_micros(iv) for iv in wf.intervals)
            return cls(slide, size, origin)
        raise ValueError(f"not a fixed window function: {wf.kind}")

    def windows_for(self, t: int) -> list[tuple[int, int]]:
        """The windows containing ``t``, in ``window_start`` order (tumble: exactly one)."""
        start = ((t - self.origin) // self.slide) * self.slide + self.origin
        out = []
        while start + self.size > t:
            out.append((start, start + self.size))
            start -= self.slide
        out.reverse()
        return out

    def closed_end(self, watermark: int) -> int:
        """The largest grid window end that is ``<= watermark``."""
        k = (watermark - self.origin - self.size) // self.slide
        return k * self.slide + self.size + self.origin
