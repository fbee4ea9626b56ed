"""Session windows: per-key activity bursts (design rule 5).

Sessions are kept per value of the non-window GROUP BY keys (``skey``). A tuple at ``t`` joins its
key's newest open session iff ``t < last + gap`` and ``t < start + max`` (Proton: an event exactly one
gap after the last one, or at ``start + max``, opens a new session); otherwise it opens a new session.
``max`` defaults to five gaps. ``window_start`` is the earliest event time of the session and
``window_end = min(last + gap, start + max)``; a session closes with the same rule as every window,
``window_end <= C``.
"""
from __future__ import annotations

from typing import Any

from ...ast import WindowFunction
from .timecol import interval_micros

DEFAULT_MAX_GAPS = 5


class Placement:
    """Where a tuple would go: ``pid`` of the session it joins (None = a new one) and the new bounds."""

    __slots__ = ("pid", "start", "last", "end")

    def __init__(self, pid: int | None, start: int, last: int, end: int):
        self.pid, self.start, self.last, self.end = pid, start, last, end


class SessionTracker:
    """The newest open session of every key, and the session rules."""

    __slots__ = ("gap", "longest", "newest")

    def __init__(self, gap: int, longest: int):
        self.gap = gap
        self.longest = longest
        self.newest: dict[Any, tuple[int, int, int]] = {}  # skey -> (pid, start, last)

    @classmethod
    def of(cls, wf: WindowFunction) -> "SessionTracker":
        gap = interval_micros(wf.intervals[0])
        longest = interval_micros(wf.intervals[1]) if len(wf.intervals) > 1 else DEFAULT_MAX_GAPS * gap
        return cls(gap, longest)

    def end_of(self, start: int, last: int) -> int:
        return min(last + self.gap, start + self.longest)

    def place(self, skey: Any, t: int) -> Placement:
        """Where ``t`` goes for key ``skey`` (no state change; see ``commit``)."""
        current = self.newest.get(skey)
        if current is not None:
            pid, start, last = current
            if t < last + self.gap and t < start + self.longest:
                start, last = min(start, t), max(last, t)
                return Placement(pid, start, last, self.end_of(start, last))
        return Placement(None, t, t, self.end_of(t, t))

    def commit(self, skey: Any, pid: int, placement: Placement) -> None:
        """Record the session ``pid`` (new or joined) as the key's newest."""
        self.newest[skey] = (pid, placement.start, placement.last)

    def closed(self, skey: Any, pid: int) -> None:
        """Session ``pid`` closed: it can no longer be joined."""
        current = self.newest.get(skey)
        if current is not None and current[0] == pid:
            del self.newest[skey]

    def state(self) -> dict[Any, tuple[int, int, int]]:
        return dict(self.newest)

    def load(self, state: dict[Any, tuple[int, int, int]]) -> None:
        self.newest = dict(state)
