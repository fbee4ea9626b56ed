"""RANGE windows of the BQL kernel: the stream-to-relation operators.

A window belongs to one FROM item (a self-join has one window per alias over the same input). It holds
*entries*: an arriving tuple plus a number unique within the query (``eid``) that the relation uses to
know which rows (combinations) an entry takes part in.

- ``RANGE n TUPLES`` keeps the last ``n`` arrivals (timestamps play no role).
- ``RANGE n SECONDS | MILLISECONDS`` keeps the entries with ``ts >= now - range`` where ``now`` is the
  timestamp of the *current* tuple of the query (both ends inclusive). The kernel prunes every time window
  of the query with the current tuple's timestamp, whichever input that tuple came from.
"""
from __future__ import annotations

import datetime as _dt
from collections import deque
from dataclasses import dataclass
from typing import Any

from ..ast import RangeWindow
from .processor import Tuple


@dataclass(slots=True)
class Entry:
    """One tuple inside a window; ``eid`` identifies it across the query's windows and relation rows."""

    eid: int
    tuple: Tuple


class Window:
    """A sliding window over one FROM item. ``spec`` None means "keep only the newest" (RANGE 1 TUPLES)."""

    __slots__ = ("unit", "size", "span", "entries")

    def __init__(self, spec: RangeWindow | None):
        if spec is None:
            self.unit, self.size = "tuples", 1
        else:
            self.unit, self.size = spec.unit, spec.value
        self.span: _dt.timedelta | None = None
        if self.unit == "seconds":
            self.span = _dt.timedelta(seconds=float(self.size))
        elif self.unit == "milliseconds":
            self.span = _dt.timedelta(milliseconds=float(self.size))
        self.entries: deque[Entry] = deque()

    @property
    def time_based(self) -> bool:
        return self.span is not None

    def add(self, entry: Entry) -> list[Entry]:
        """Append an arrival; a tuple window drops (and returns) what falls out of its count."""
        self.entries.append(entry)
        removed: list[Entry] = []
        if not self.time_based:
            while len(self.entries) > self.size:
                removed.append(self.entries.popleft())
        return removed

    def prune(self, now: _dt.datetime) -> list[Entry]:
        """Drop (and return) the entries older than ``now - range`` (time windows only)."""
        if self.span is None or not self.entries:
            return []
        limit = now - self.span
        # Entries normally arrive in timestamp order, but out-of-order data must not keep stale
        # entries alive, so the whole window is checked (SensorBee does the same).
        if all(e.tuple.ts >= limit for e in self.entries):
            return []
        kept: deque[Entry] = deque()
        removed: list[Entry] = []
        for e in self.entries:
            (kept if e.tuple.ts >= limit else removed).append(e)
        self.entries = kept
        return removed

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    # ------------------------------------------------------------ snapshot support

    def state(self) -> list[tuple[int, dict[str, Any], _dt.datetime, int, str]]:
        return [(e.eid, e.tuple.data, e.tuple.ts, e.tuple.seq, e.tuple.input) for e in self.entries]

    def load(self, state: list[tuple[int, dict[str, Any], _dt.datetime, int, str]]) -> None:
        self.entries = deque(Entry(eid, Tuple(data, ts, seq, inp)) for eid, data, ts, seq, inp in state)
