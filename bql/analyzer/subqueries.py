"""Rules for subqueries in FROM (and so for ``WITH`` CTEs, which desugar to them).

- A subquery item is read like a stream by the BQL SELECT kernel: it needs a ``[RANGE ...]`` window
  (without BUFFER SIZE or IF FULL: its tuples are handed over directly, never queued), and the SELECT
  reading it that way cannot be a Timeplus window query (window function, EMIT) nor use MATCH_RECOGNIZE.
- Read without a window, a subquery is Timeplus' bare stream (seed 003's ``SELECT device, max(cpu_usage)
  FROM (SELECT ...) GROUP BY device``): allowed in a streaming tail (no emitter, no EMIT, the one FROM
  item; ``timeplus_query.is_streaming_tail``) or a query with EMIT, which then runs in the Timeplus
  window operator over the subquery's output stream. A MATCH_RECOGNIZE reads its input subquery this way
  (``(select) MATCH_RECOGNIZE (...)``).
- Inside, a subquery is any SELECT (a Timeplus aggregation or a MATCH_RECOGNIZE query included); the
  other rules check it like a top-level SELECT (``context.selects_of`` lists it).
"""
from __future__ import annotations

from ..ast import MatchRecognize, Statement, SubqueryRef, WindowFunction
from ..timeplus_query import is_streaming_tail
from .context import Context, fail, selects_of


def check_subqueries(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        subqueries = [f for f in select.from_items if isinstance(f, SubqueryRef)]
        if not subqueries:
            continue
        bare_ok = select.emit is not None or is_streaming_tail(select)
        for item in subqueries:
            if item.window is None:
                if bare_ok:
                    continue
                raise fail(f"the subquery '{item.alias}' needs a window such as [RANGE 1 TUPLES]", item)
            if item.window.buffer_size is not None or item.window.drop_mode is not None:
                raise fail(f"BUFFER SIZE and IF FULL do not apply to the subquery '{item.alias}': "
                           "its tuples are not queued", item.window)
        windowed = [f for f in subqueries if f.window is not None]
        timeplus = select.emit is not None or any(isinstance(f, WindowFunction) for f in select.from_items)
        if windowed and (timeplus or any(isinstance(f, MatchRecognize) for f in select.from_items)):
            kind = "a Timeplus window query" if timeplus else "a MATCH_RECOGNIZE query"
            raise fail(f"{kind} cannot read a subquery (yet); read '{windowed[0].alias}' "
                       "from a SELECT with RANGE windows", windowed[0])
