"""Rules for subqueries in FROM (and so for ``WITH`` CTEs, which desugar to them).

- A subquery item is read like a stream by the BQL SELECT kernel: it needs a ``[RANGE ...]`` window
  (without BUFFER SIZE or IF FULL: its tuples are handed over directly, never queued), and the SELECT reading it cannot be a Timeplus window query (window function, EMIT) nor use
  MATCH_RECOGNIZE (those kernels read journal streams only, for now).
- Inside, a subquery is any SELECT (a Timeplus aggregation or a MATCH_RECOGNIZE query included); the
  other rules check it like a top-level SELECT (``context.selects_of`` lists it).
"""
from __future__ import annotations

from ..ast import MatchRecognize, Statement, SubqueryRef, WindowFunction
from .context import Context, fail, selects_of


def check_subqueries(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        subqueries = [f for f in select.from_items if isinstance(f, SubqueryRef)]
        if not subqueries:
            continue
        for item in subqueries:
            if item.window is None:
                raise fail(f"the subquery '{item.alias}' needs a window such as [RANGE 1 TUPLES]", item)
            if item.window.buffer_size is not None or item.window.drop_mode is not None:
                raise fail(f"BUFFER SIZE and IF FULL do not apply to the subquery '{item.alias}': "
                           "its tuples are not queued", item.window)
        timeplus = select.emit is not None or any(isinstance(f, WindowFunction) for f in select.from_items)
        if timeplus or any(isinstance(f, MatchRecognize) for f in select.from_items):
            kind = "a Timeplus window query" if timeplus else "a MATCH_RECOGNIZE query"
            raise fail(f"{kind} cannot read a subquery (yet); read '{subqueries[0].alias}' "
                       "from a SELECT with RANGE windows", subqueries[0])
