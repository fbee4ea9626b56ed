"""Parse tree → AST for subqueries in FROM and ``WITH`` CTEs, which desugar to subqueries.

``(select) [RANGE ...] AS alias`` is a ``SubqueryRef``: the subquery's output stream read like a
stream. ``WITH a AS (s1), b AS (s2) body`` has no node of its own: every FROM reference
``a [RANGE ...] [AS x]`` in a later CTE or in the body (inside their subqueries too) becomes
``(s1) [RANGE ...] AS x`` (alias defaulting to the CTE's name), so the rest of the system sees only
subqueries. A CTE shadows a stream of the same name; a CTE nobody reads is dropped. A CTE may only be
read as ``name [RANGE ...]``, by a MATCH_RECOGNIZE (``name MATCH_RECOGNIZE (...)``) or by a Timeplus window
function (``tumble(name, ...)``), which then read the CTE's subquery — a UDSF over it is a syntax error —
and two CTEs cannot share a name.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from .ast import (
    SUBQUERY_ALIAS,
    MatchRecognize,
    RangeWindow,
    Select,
    SelectUnion,
    StreamRef,
    SubqueryRef,
    UdsfCall,
    WindowFunction,
)
from .transform_base import fail, ident, span_of


class CteRules:
    """Transformer rules for subqueries in FROM and WITH (mixed into ``BQLTransformer``)."""

    def subquery_ref(self, meta, select, *opts):
        windows = [o for o in opts if isinstance(o, RangeWindow)]
        if len(windows) > 1:
            raise fail("a subquery in FROM takes one RANGE window", windows[1])
        alias = next((o[1] for o in opts if isinstance(o, tuple)), SUBQUERY_ALIAS)
        return SubqueryRef(select, windows[0] if windows else None, alias, span=span_of(meta))

    def cte(self, meta, name, select):
        return (ident(name), select, name)

    def with_select(self, meta, *children):
        *ctes, body = children
        defined: dict[str, Any] = {}
        for name, select, tok in ctes:
            if name in defined:
                raise fail(f"the WITH clause defines '{name}' twice", tok)
            defined[name] = substitute(select, defined)
        body = substitute(body, defined)
        return dataclasses.replace(body, span=span_of(meta))  # the statement's text starts at WITH


def substitute(stmt: Any, ctes: dict[str, Any]) -> Any:
    """``stmt`` (a Select or SelectUnion) with its FROM references to ``ctes`` replaced by subqueries."""
    if not ctes:
        return stmt
    if isinstance(stmt, SelectUnion):
        selects = tuple(substitute(s, ctes) for s in stmt.selects)
        return dataclasses.replace(stmt, selects=selects)
    items = tuple(_item(item, ctes) for item in stmt.from_items)
    return dataclasses.replace(stmt, from_items=items) if isinstance(stmt, Select) else stmt


def _item(item: Any, ctes: dict[str, Any]) -> Any:
    if isinstance(item, StreamRef) and item.name in ctes:
        return SubqueryRef(ctes[item.name], item.window, item.alias or item.name, span=item.span)
    if isinstance(item, SubqueryRef):
        return dataclasses.replace(item, select=substitute(item.select, ctes))
    if isinstance(item, WindowFunction) and item.source is not None:
        source = dataclasses.replace(item.source, select=substitute(item.source.select, ctes))
        return dataclasses.replace(item, source=source)
    if isinstance(item, WindowFunction) and item.stream in ctes:
        return dataclasses.replace(item, source=SubqueryRef(ctes[item.stream], None, item.stream, span=item.span))
    if isinstance(item, MatchRecognize):
        source = item.input
        if isinstance(source, StreamRef) and source.name in ctes:
            if source.window is not None:
                raise fail(f"MATCH_RECOGNIZE reads the CTE '{source.name}' without a RANGE window", source.window)
            return dataclasses.replace(item, input=SubqueryRef(ctes[source.name], None, source.name,
                                                               span=source.span))
        if isinstance(source, SubqueryRef):
            inner = dataclasses.replace(source, select=substitute(source.select, ctes))
            return dataclasses.replace(item, input=inner)
    if isinstance(item, UdsfCall):
        for arg in item.args:
            value = getattr(arg, "value", None)
            if isinstance(value, str) and value.lower() in ctes:
                raise fail(f"a UDSF cannot read the CTE '{value}' (yet)", arg)
    return item
