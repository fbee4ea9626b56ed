"""The LEFT JOIN kernel: ``SELECT ... FROM a [RANGE ...] LEFT JOIN b [RANGE ...] ON cond [WHERE ...]``.

SensorBee's processing model with SQL's LEFT JOIN as the relation of each step (docs/sql-breadth.md,
"LEFT JOIN"). After the tuple entered its windows, the step's relation lists the left window's
entries, oldest first; each entry contributes

- one row per entry of the right window it *matches* (``cond`` is true), in the right window's order,
  or
- when it matches none, one row whose right side is ``NULL_PADDED`` (every field of it reads NULL);

and WHERE then keeps the rows for which it is true. Grouping, DISTINCT / ORDER BY and the emitter
work on that relation as on any other (``kernel.SelectProcessor``).

Evaluation happens once per combination, as in the inner kernel: ``cond`` and then WHERE are
evaluated when a pair is formed (the new tuple with every entry of the other window) and their
verdicts kept while the pair lives; a padded row's WHERE is evaluated when it appears (the left entry
arrives without a match, or its last match left the right window) and kept until it disappears. A
failing evaluation drops the step: the windows change as always, but none of the step's new pairs or
padded rows exist (a padded row it could not add is tried again at the next step).
"""
from __future__ import annotations

import datetime as _dt
import pickle
from typing import Any

from ..ast import Select
from ..eval import Env
from ..eval.env import NULL_PADDED
from .grouping import compile_where
from .kernel import Row, SelectProcessor, truth
from .processor import ProcessorContext, Tuple
from .windows import Entry

Pairs = dict[int, Row | None]  # right eid → the pair's row (None: WHERE dropped it), in right order


class LeftJoinProcessor(SelectProcessor):
    """``from_items[0] LEFT JOIN from_items[1] ON select.left_join_on`` over two RANGE windows."""

    def __init__(self, select: Select, context: ProcessorContext | None = None):
        super().__init__(select, context)
        if len(self.slots) != 2 or select.left_join_on is None:
            raise ValueError("a LEFT JOIN reads exactly two FROM items and has an ON condition")
        self.on = compile_where(select.left_join_on, self.aliases, self.context.functions)
        self.matches: dict[int, Pairs] = {}  # left eid → its matches (only entries with ≥ 1)
        self.padded: dict[int, Row | None] = {}  # left eid → its padded row (None: WHERE dropped it)

    # ------------------------------------------------------------ one step

    def _relation_rows(self, tup: Tuple, targets: list[int], now: _dt.datetime) -> list[dict[str, Any]]:
        new, removed = self._admit(tup, targets)
        if removed:
            self._forget(removed)
        fresh = self._new_pairs(new.get(0), new.get(1), now)
        appearing = self._new_padded(fresh, now)
        for l_eid, pairs in fresh.items():
            self.matches.setdefault(l_eid, {}).update(pairs)
            self.padded.pop(l_eid, None)
        self.padded.update(appearing)
        return self._outputs(self._relation(), now)

    def _forget(self, removed: set[int]) -> None:
        """Drop the pairs and padded rows of entries that left their window."""
        for l_eid in [e for e in self.matches if e in removed]:
            del self.matches[l_eid]
        for l_eid in [e for e in self.padded if e in removed]:
            del self.padded[l_eid]
        for l_eid, pairs in list(self.matches.items()):
            if not removed.isdisjoint(pairs):
                kept = {r: row for r, row in pairs.items() if r not in removed}
                if kept:
                    self.matches[l_eid] = kept
                else:
                    del self.matches[l_eid]

    def _new_pairs(self, new_left: Entry | None, new_right: Entry | None, now: _dt.datetime) -> dict[int, Pairs]:
        """The matching pairs that contain a new entry, with their WHERE verdicts (in FROM order: the
        new left entry with the whole right window first, then the other left entries with the new
        right entry)."""
        left, right = self.slots
        fresh: dict[int, Pairs] = {}
        if new_left is not None:
            for r in right.window.entries:
                self._pair(new_left, r, now, fresh)
        if new_right is not None:
            for l in left.window.entries:
                if l is not new_left:
                    self._pair(l, new_right, now, fresh)
        return fresh

    def _pair(self, l: Entry, r: Entry, now: _dt.datetime, fresh: dict[int, Pairs]) -> None:
        env = Env({self.aliases[0]: l.tuple, self.aliases[1]: r.tuple}, None, now)
        if not truth(self.on(env), "ON"):
            return
        kept = self.where is None or truth(self.where(env), "WHERE")
        fresh.setdefault(l.eid, {})[r.eid] = Row((l.eid, r.eid), env) if kept else None

    def _new_padded(self, fresh: dict[int, Pairs], now: _dt.datetime) -> dict[int, Row | None]:
        """Padded rows for the left entries that match nothing and have none yet (WHERE evaluated)."""
        appearing: dict[int, Row | None] = {}
        for l in self.slots[0].window.entries:
            if l.eid in self.matches or l.eid in fresh or l.eid in self.padded:
                continue
            env = Env({self.aliases[0]: l.tuple, self.aliases[1]: NULL_PADDED}, None, now)
            kept = self.where is None or truth(self.where(env), "WHERE")
            appearing[l.eid] = Row((l.eid, -1), env) if kept else None
        return appearing

    def _relation(self) -> list[Row]:
        rows: list[Row] = []
        for l in self.slots[0].window.entries:
            pairs = self.matches.get(l.eid)
            if pairs is not None:
                rows.extend(row for row in pairs.values() if row is not None)
                continue
            row = self.padded.get(l.eid)
            if row is not None:
                rows.append(row)
        return rows

    # ------------------------------------------------------------ snapshot / restore

    def snapshot(self) -> bytes:
        def cached(row: Row | None) -> Any:
            return None if row is None else (row.out, row.key, row.has_key)

        state = {
            "kernel": super().snapshot(),
            "matches": {l: {r: cached(row) for r, row in pairs.items()} for l, pairs in self.matches.items()},
            "padded": {l: cached(row) for l, row in self.padded.items()},
        }
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        state = pickle.loads(data)
        super().restore(state["kernel"])
        by_eid = {e.eid: e.tuple for slot in self.slots for e in slot.window.entries}
        la, ra = self.aliases

        def row(l: int, r: int, cached: Any) -> Row | None:
            if cached is None:
                return None
            env = Env({la: by_eid[l], ra: by_eid[r] if r >= 0 else NULL_PADDED}, None)
            return Row((l, r), env, *cached)

        self.matches = {l: {r: row(l, r, c) for r, c in pairs.items()} for l, pairs in state["matches"].items()}
        self.padded = {l: row(l, -1, c) for l, c in state["padded"].items()}
