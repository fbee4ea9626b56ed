"""Output rows of MATCH_RECOGNIZE: ONE ROW PER MATCH (partition columns, then measures) or ALL ROWS
PER MATCH (the input row plus the measures, excluded rows left out), with empty matches shown or
omitted and unmatched rows (all measures NULL) for WITH UNMATCHED ROWS.

Measures default to RUNNING semantics in ALL ROWS PER MATCH (evaluated as of each row) and are
FINAL in ONE ROW PER MATCH. Every output row carries the timestamp of the last row of its match.
"""
from __future__ import annotations

from typing import Any, Callable

from .views import View


class OutputBuilder:
    """Turns matcher events into ``(row dict, timestamp)`` pairs."""

    def __init__(self, measures: list[tuple[str, Callable]], partition_names: list[str],
                 rows_per_match: str, empty_matches: str | None, ctx: Any):
        self.measures = measures
        self.partition_names = partition_names
        self.all_rows = rows_per_match == "all"
        self.empty = empty_matches or "show"
        self.ctx = ctx

    def render(self, event: tuple, rows: Any, pvalues: tuple) -> list[tuple[dict, Any]]:
        """The output rows of one event; raises ``Blocked`` when a measure needs a future row."""
        kind = event[0]
        if kind == "unmatched":
            if not (self.all_rows and self.empty == "with_unmatched"):
                return []
            tup = rows.get(event[1])
            row = dict(tup.data)
            for name, _ in self.measures:
                row[name] = None
            return [(row, tup.ts)]
        if kind != "match":
            return []
        _, start, end, labels, mno = event
        names = [v for v, _ in labels]
        last = end - 1
        ts = rows.get(last if end > start else start).ts
        if not self.all_rows:
            view = View(rows, start, names, last, last, mno, self.ctx)
            row = dict(zip(self.partition_names, pvalues))
            for name, fn in self.measures:
                row[name] = fn(view)
            return [(row, ts)]
        if end == start:
            if self.empty == "omit":
                return []
            view = View(rows, start, names, start - 1, start - 1, mno, self.ctx)
            row = dict(rows.get(start).data)
            for name, fn in self.measures:
                row[name] = fn(view)
            return [(row, ts)]
        out = []
        for i in range(start, end):
            if labels[i - start][1]:
                continue  # excluded from the output
            view = View(rows, start, names, i, last, mno, self.ctx)
            row = dict(rows.get(i).data)
            for name, fn in self.measures:
                row[name] = fn(view)
            out.append((row, ts))
        return out

    def first_row(self, event: tuple) -> int:
        """The first row position an event's rendering reads."""
        return event[1]
