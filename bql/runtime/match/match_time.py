"""``MATCH_ROWTIME()`` and ``MATCH_PROCTIME()`` (Flink's time attributes of a match), MEASURES only.

- ``MATCH_ROWTIME()``: the time attribute — the first ORDER BY key, of its type — of the last row of
  the match (of the row it was found at for an empty match); the same for every row of an ALL ROWS PER
  MATCH match, as the output rows' timestamp is.
- ``MATCH_PROCTIME()``: the processing time when the measure is computed, a UTC timestamp that never
  goes back within a query (``ProcessingClock``).

The parser turns the calls inside a MATCH_RECOGNIZE clause into ``MatchTime`` nodes.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from ...ast import MatchTime

__all__ = ["MatchTime", "ProcessingClock", "rowtime"]


def rowtime(view: Any) -> Any:
    """The first ORDER BY key of the match's last row (``view``: a ``View`` of the match)."""
    last = view.last if view.last >= view.start else view.start
    return view.part.key0(last)


class ProcessingClock:
    """UTC wall-clock readings that never go back (a clock stepping back repeats the last reading)."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: _dt.datetime | None = None

    def now(self) -> _dt.datetime:
        now = _dt.datetime.now(_dt.timezone.utc)
        if self.last is not None and now < self.last:
            now = self.last
        self.last = now
        return now
