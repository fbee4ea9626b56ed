"""``OrderedWindow``: a RANGE window that prunes from its head instead of scanning.

The reference ``Window.prune`` checks every entry, because a tuple may arrive with a timestamp older
than the ones before it (out-of-order data must not keep stale entries alive). This window counts the
*descents* of its deque — adjacent entries whose timestamps go down. While there are none, the deque is
sorted by timestamp, so the entries older than ``now - range`` are exactly a prefix and pruning pops
them from the head (cost proportional to what leaves). When a tuple arrived out of order the window
falls back to the reference scan until the descents have left, so the result is always the reference's.

Count windows (``RANGE n TUPLES``) already drop from the head in ``Window.add``.
"""
from __future__ import annotations

import datetime as _dt
from collections import deque
from typing import Any

from ..windows import Entry, Window


def count_descents(entries: deque[Entry]) -> int:
    """How many adjacent pairs of ``entries`` have a later timestamp first."""
    n = 0
    prev = None
    for e in entries:
        ts = e.tuple.ts
        if prev is not None and ts < prev:
            n += 1
        prev = ts
    return n


class OrderedWindow(Window):
    """A ``Window`` with head pruning while its entries are in timestamp order (see the module doc)."""

    __slots__ = ("descents",)

    def __init__(self, spec: Any):
        super().__init__(spec)
        self.descents = 0

    def add(self, entry: Entry) -> list[Entry]:
        """``Window.add``: append; a count window drops (and returns) what falls out of its count."""
        entries = self.entries
        if self.span is not None:
            if entries and entry.tuple.ts < entries[-1].tuple.ts:
                self.descents += 1
            entries.append(entry)
            return []
        entries.append(entry)
        if len(entries) <= self.size:
            return []
        removed = [entries.popleft()]
        while len(entries) > self.size:
            removed.append(entries.popleft())
        return removed

    def prune(self, now: _dt.datetime) -> list[Entry]:
        """The reference's result: drop (and return) every entry older than ``now - range``."""
        entries = self.entries
        if self.span is None or not entries:
            return []
        if self.descents:
            removed = super().prune(now)
            if removed:
                self.descents = count_descents(self.entries)
            return removed
        limit = now - self.span
        removed: list[Entry] = []
        while entries and entries[0].tuple.ts < limit:
            removed.append(entries.popleft())
        return removed

    def load(self, state: list[tuple[int, dict[str, Any], _dt.datetime, int, str]]) -> None:
        super().load(state)
        self.descents = count_descents(self.entries) if self.span is not None else 0
