"""Relation-to-stream operators: RSTREAM, ISTREAM, DSTREAM.

- RSTREAM emits the whole current output relation.
- ISTREAM emits the rows of the current relation that are not in the previous one (multiset
  difference current − previous, so multiplicities count).
- DSTREAM emits the rows of the previous relation that are not in the current one (previous − current).

Rows are compared by value with ``sbpy.bql.values.multiset_key`` (2 equals 2.0, NULL equals NULL inside
containers, NaN never equals anything). The previous relation is replaced only by ``emit`` — the kernel
calls it only after a successful step, so a failed step leaves the emitter untouched.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from ..values import multiset_key


class Emitter:
    """One emitter; ``emit(current_rows)`` returns the rows to send and remembers the relation."""

    __slots__ = ("kind", "_prev_rows", "_prev_keys", "_prev_counts")

    def __init__(self, kind: str):
        if kind not in ("rstream", "istream", "dstream"):
            raise ValueError(f"unknown emitter '{kind}'")
        self.kind = kind
        self._prev_rows: list[dict[str, Any]] = []
        self._prev_keys: list[Any] = []
        self._prev_counts: Counter = Counter()

    def emit(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.kind == "rstream":
            return list(rows)
        keys = [multiset_key(r) for r in rows]
        counts = Counter(keys)
        out: list[dict[str, Any]] = []
        if self.kind == "istream":
            seen: Counter = Counter()
            for key, row in zip(keys, rows):
                seen[key] += 1
                if seen[key] > self._prev_counts[key]:
                    out.append(row)
        else:
            seen = Counter()
            for key, row in zip(self._prev_keys, self._prev_rows):
                seen[key] += 1
                if seen[key] > counts[key]:
                    out.append(row)
        self._prev_rows, self._prev_keys, self._prev_counts = list(rows), keys, counts
        return out

    # ------------------------------------------------------------ snapshot support

    def state(self) -> list[dict[str, Any]]:
        return self._prev_rows

    def load(self, rows: list[dict[str, Any]]) -> None:
        self._prev_rows = list(rows)
        self._prev_keys = [multiset_key(r) for r in rows] if self.kind != "rstream" else []
        self._prev_counts = Counter(self._prev_keys)
