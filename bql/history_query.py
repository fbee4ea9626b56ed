"""The rules that say how a SELECT reads ``table(stream)`` (docs/timeplus.md, "table()").

``table(s)`` is the history of ``s`` that the topology retains (a source's ``history`` parameter), read
once when the query starts: a bounded relation, not a stream. Two query shapes read it:

- a **table query** — every FROM item is a ``table(...)``: a bounded query that computes its result
  once over the snapshot, emits it and ends (``done``); see ``runtime.history``;
- a **stream-table join** — stream items with RANGE windows next to ``table(...)`` items: the SELECT
  kernel's join, the table side a window that holds the snapshot and never changes.

The analyzer (``analyzer.history``), ``runtime.build_processor`` and the server decide by these
functions, so a query is checked by the same reading it runs under. The module needs only the AST, so
either side imports it without a cycle.
"""
from __future__ import annotations

from .ast import HistoryTable, Select, SelectUnion, Statement


def history_tables(select: Select) -> list[HistoryTable]:
    """The ``table(...)`` items of ``select``'s FROM list, in FROM order."""
    return [item for item in select.from_items if isinstance(item, HistoryTable)]


def is_table_query(select: Select) -> bool:
    """Whether ``select`` reads only ``table(...)`` items: a bounded query that runs once."""
    return bool(select.from_items) and all(isinstance(item, HistoryTable) for item in select.from_items)


def reads_history(stmt: Statement) -> bool:
    """Whether any SELECT of ``stmt`` (a Select or SelectUnion) has a ``table(...)`` item."""
    selects = stmt.selects if isinstance(stmt, SelectUnion) else (stmt,) if isinstance(stmt, Select) else ()
    return any(history_tables(s) for s in selects)


def history_streams(stmt: Statement) -> list[str]:
    """The node names ``stmt``'s ``table(...)`` items read (FROM order, de-duplicated)."""
    selects = stmt.selects if isinstance(stmt, SelectUnion) else (stmt,) if isinstance(stmt, Select) else ()
    names: list[str] = []
    for s in selects:
        names += [t.stream for t in history_tables(s) if t.stream not in names]
    return names
