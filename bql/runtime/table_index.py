"""A hash index on the table side of a stream-table join (``table(t)``, ``runtime.history``).

The SELECT kernel forms, for each arriving stream tuple, one combination with every row of the table
window and evaluates WHERE on each. When WHERE's *first* conjunct (BQL's AND decides from the left) is
an equality of two field paths, ``s:a.b = t:c`` with one side reading only the table's alias and the
other only the arriving tuple's, a combination whose two keys are both indexable and different is false
at that conjunct — nothing else of it is evaluated, nothing is raised — so leaving it out changes
neither the rows, their order, nor the errors. ``TableIndex.candidates`` gives the table entries that
remain, in window order:

- the entries whose key equals the stream key (``incremental.join_keys.join_key``: ``a = b`` is true
  exactly when the keys are equal; int and float compare as floats);
- every entry whose key is not indexable — NULL (``NULL AND x`` still evaluates ``x``), NaN, a value
  ``join_key`` does not model, or a path that fails on the row (the full evaluation raises the same
  error) — so it is evaluated as without the index.

A stream key that is not indexable (or fails) gives all entries. Field paths have no side effects, so
reading the table keys once, when the index is built, equals reading them per combination. The index
is rebuilt whenever the window's entries were replaced (a restore). ``ProcessorContext.kernel =
"reference"`` turns it off (the tests compare the two).
"""
from __future__ import annotations

from bisect import insort
from typing import Any

from ..ast import BinaryOp, FieldRef
from ..eval import Env, Scope, compile_expr
from .incremental.join_keys import NO_MATCH, conjuncts, join_key


def _key(fn: Any, env: Env) -> Any:
    """The join key of ``fn`` on ``env``; NO_MATCH when it is not indexable or fails."""
    try:
        return join_key(fn(env))
    except Exception:  # noqa: BLE001 - Unindexable or an evaluation error: evaluated fully instead
        return NO_MATCH


class TableIndex:
    """Table entries by the join key of the table side of WHERE's first conjunct (module doc)."""

    def __init__(self, table_alias: str, table_key: Any, probe_alias: str, probe_key: Any, probe_slot: int):
        self.table_alias, self.probe_alias, self.probe_slot = table_alias, probe_alias, probe_slot
        self.table_key, self.probe_key = table_key, probe_key
        self.built_for: Any = None
        self.buckets: dict[Any, list[int]] = {}
        self.unindexed: list[int] = []  # positions in the window, ascending
        self.entries: list[Any] = []

    def _build(self, window: Any) -> None:
        self.entries = list(window.entries)
        self.buckets, self.unindexed = {}, []
        for pos, entry in enumerate(self.entries):
            key = _key(self.table_key, Env({self.table_alias: entry.tuple}))
            if key is NO_MATCH:
                self.unindexed.append(pos)
            else:
                self.buckets.setdefault(key, []).append(pos)
        self.built_for = window.entries

    def candidates(self, window: Any, slot: int, probe: Any) -> list[Any] | None:
        """The table entries a new entry of slot ``slot`` (its tuple ``probe``) must be combined with,
        in window order; None when the index does not apply (another slot's new entry)."""
        if slot != self.probe_slot:
            return None
        if self.built_for is not window.entries:
            self._build(window)
        key = _key(self.probe_key, Env({self.probe_alias: probe}))
        if key is NO_MATCH:
            return self.entries
        hits = self.buckets.get(key, [])
        if self.unindexed:
            merged = list(hits)
            for pos in self.unindexed:
                insort(merged, pos)
            hits = merged
        return [self.entries[pos] for pos in hits]


def _single_alias(expr: Any, aliases: tuple[str, ...]) -> str | None:
    """The alias a plain field path reads (None for anything else)."""
    if type(expr) is not FieldRef:
        return None
    if expr.stream is not None:
        return expr.stream if expr.stream in aliases else None
    return aliases[0] if len(aliases) == 1 else None


def attach_table_indexes(slots: list[Any], where: Any, aliases: tuple[str, ...], registry: Any = None) -> None:
    """Give each ``table()`` slot a ``TableIndex`` when WHERE's first conjunct allows it (module doc)."""
    if where is None:
        return
    first = conjuncts(where)[0]
    if not (isinstance(first, BinaryOp) and first.op == "="):
        return
    left, right = _single_alias(first.left, aliases), _single_alias(first.right, aliases)
    if left is None or right is None or left == right:
        return
    by_alias = {s.alias: s for s in slots}
    scope = Scope(aliases, registry=registry)
    for table_side, probe_side in ((first.left, first.right), (first.right, first.left)):
        table_alias, probe_alias = _single_alias(table_side, aliases), _single_alias(probe_side, aliases)
        table_slot, probe_slot = by_alias.get(table_alias), by_alias.get(probe_alias)
        if table_slot is None or probe_slot is None or not table_slot.is_table or probe_slot.is_table:
            continue
        table_slot.table_index = TableIndex(table_alias, compile_expr(table_side, scope), probe_alias,
                                            compile_expr(probe_side, scope), probe_slot.index)
