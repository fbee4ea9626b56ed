"""``table(stream)`` in a SELECT: the rewrites (``prepare_history``) and checks (``check_history``).

The shapes (``history_query``):

- **table query** (only ``table(...)`` items): Timeplus syntax for a bounded query. As in a Timeplus
  query, ``count()`` is ``count(*)`` and an unprefixed HAVING field naming a select alias stands for its
  expression; the emitter may be left out (it is RSTREAM) and OFFSET is allowed, also with ORDER BY
  (the seed's ``SELECT * FROM table(stream) ORDER BY a LIMIT 3 OFFSET 1``). ISTREAM / DSTREAM and EMIT
  are refused: the result is computed once.
- **stream-table join** (``s [RANGE ...] JOIN table(t) ON ...`` or the FROM-list spelling): SensorBee's
  join, any emitter. Timeplus' streaming spelling ``SELECT ... FROM s JOIN table(t) ON ...`` (a bare
  stream, no emitter or RSTREAM, no EMIT) reads each arriving tuple against the table: it becomes
  ``SELECT RSTREAM ... FROM s [RANGE 1 TUPLES] JOIN table(t) ...`` (``TAIL_WINDOW``), which emits the
  rows the arriving tuple forms and nothing else. Such a tail cannot aggregate.

Refused everywhere: ``table()`` in a Timeplus window query (tumble/hop/session, EMIT), in a UNION ALL,
in a subquery (CTE), on the left of a LEFT JOIN (its rows never arrive, so they would never be padded).
"""
from __future__ import annotations

import dataclasses

from ..ast import HistoryTable, RangeWindow, Select, SelectUnion, Statement, StreamRef
from ..history_query import history_tables, is_table_query
from .aggregates import is_aggregating
from .context import Context, fail, selects_of
from ..transform_base import rewrite as transform
from .timeplus_clauses import _aliases, _count_star, _substitute_aliases

# The window a bare stream joined with table() gets (compared by identity: the analyzer knows the rewrite)
TAIL_WINDOW = RangeWindow(1, "tuples")


def _tail_join(select: Select) -> bool:
    bare = [i for i in select.from_items if isinstance(i, StreamRef) and i.window is None]
    return (bool(bare) and bool(history_tables(select)) and select.emit is None
            and (select.emitter or "rstream").lower() == "rstream")


def prepare_history(select: Select) -> Select:
    """``select`` with the readings above applied (unchanged if it has no ``table(...)`` item)."""
    if is_table_query(select):
        projections = tuple(transform(p, _count_star) for p in select.projections)
        having = select.having
        if having is not None:
            having = _substitute_aliases(transform(having, _count_star), _aliases(projections))
        return dataclasses.replace(select, projections=projections, having=having,
                                   emitter=select.emitter or "rstream")
    if _tail_join(select):
        items = tuple(dataclasses.replace(i, window=TAIL_WINDOW) if isinstance(i, StreamRef) and i.window is None
                      else i for i in select.from_items)
        return dataclasses.replace(select, from_items=items, emitter="rstream")
    return select


def check_history(stmt: Statement, ctx: Context) -> None:
    """The placement rules of ``table(...)`` (module doc)."""
    selects = selects_of(stmt)
    for k, select in enumerate(selects):
        tables = history_tables(select)
        if not tables:
            continue
        first = tables[0]
        if k > 0 or isinstance(stmt, SelectUnion):
            raise fail("table() cannot be read in a subquery, a CTE or UNION ALL (yet)", first)
        if select.emit is not None:
            raise fail("table() cannot be read by a query with an EMIT clause", first)
        if any(not isinstance(i, (StreamRef, HistoryTable)) for i in select.from_items):
            raise fail("table() can only be joined with streams that have a RANGE window", first)
        if select.left_join_on is not None and isinstance(select.from_items[0], HistoryTable):
            raise fail("table() cannot be the preserved side of a LEFT JOIN (its rows never arrive)",
                       select.from_items[0])
        if is_table_query(select):
            if (select.emitter or "rstream").lower() != "rstream":
                raise fail(f"a query over table() computes its result once: {select.emitter.upper()} cannot "
                           "be used (use RSTREAM or no emitter)", select)
            continue
        tail = [i for i in select.from_items if isinstance(i, StreamRef) and i.window is TAIL_WINDOW]
        if tail and is_aggregating(select, ctx):
            raise fail(f"stream '{tail[0].name}' joined with table() needs a RANGE window to aggregate",
                       tail[0])
