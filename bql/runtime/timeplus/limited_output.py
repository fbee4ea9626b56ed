"""``OFFSET m`` / ``LIMIT n`` over a Timeplus query's output rows.

A query's rows pass through one ``LimitedOutput`` in the order they are produced: the first ``m`` are
skipped, the next ``n`` are kept, and the row after them (or the first row, for ``LIMIT 0``) marks the
query ``done`` — it stops even mid-emission and produces nothing more. ``WindowProcessor`` counts its
own rows; ``SubstreamProcessor`` counts the merged rows of all its substreams (each substream runs
without LIMIT / OFFSET). The three counters are part of both processors' snapshots.
"""
from __future__ import annotations

from typing import Any


class LimitedOutput:
    """The LIMIT / OFFSET counters of one query's output."""

    def __init__(self, limit: int | None, offset: int | None):
        self.limit = limit
        self.offset = offset or 0
        self.reset()

    def reset(self) -> None:
        self.emitted = 0  # rows kept so far
        self.skipped = 0  # rows skipped by OFFSET so far
        self.done = False

    def admit(self) -> bool:
        """Whether the next row is kept (counting it); False once the query is done."""
        if self.done:
            return False
        if self.skipped < self.offset:
            self.skipped += 1
            return False
        if self.limit is not None and self.emitted >= self.limit:  # LIMIT 0: stop at the first row
            self.done = True
            return False
        self.emitted += 1
        if self.limit is not None and self.emitted >= self.limit:
            self.done = True
        return True

    def state(self) -> dict[str, Any]:
        return {"emitted": self.emitted, "skipped": self.skipped, "done": self.done}

    def load(self, state: dict[str, Any]) -> None:
        self.emitted = state["emitted"]
        self.skipped = state.get("skipped", 0)  # snapshots from before OFFSET have none
        self.done = state["done"]
