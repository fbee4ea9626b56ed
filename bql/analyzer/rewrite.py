"""Rewrites applied before analysis (``prepare``).

Inside a MATCH_RECOGNIZE clause (MEASURES and DEFINE) a field selector ``A.price`` whose first key
names a pattern or subset variable (case-insensitively) means "price of the row mapped to A": it
becomes ``PatternFieldRef(var="A", path=(price,))``. Everywhere else ``a.b`` stays a JSON path.

A SELECT over MATCH_RECOGNIZE written without an emitter (``SELECT * FROM t MATCH_RECOGNIZE (...)``, as
in the seeds' YQL and Flink examples) gets RSTREAM: it emits each match row once, Flink's "append table",
which is what RSTREAM does with MATCH_RECOGNIZE (the only emitter it accepts). The input subquery of
``(select) MATCH_RECOGNIZE (...)`` is prepared like a subquery in FROM.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ..ast import (
    CreateStreamAsSelect,
    Explain,
    FieldRef,
    KeyStep,
    MatchRecognize,
    Node,
    PatternFieldRef,
    PatternVar,
    Select,
    SelectUnion,
    Statement,
    SubqueryRef,
    WindowFunction,
)
from .history import prepare_history
from .timeplus_clauses import prepare_timeplus


def transform(node: Node, fn: Callable[[Node], Node]) -> Node:
    """Rebuild ``node`` bottom-up, replacing every node ``n`` by ``fn(n)`` (spans kept)."""
    changes = {}
    for f in dataclasses.fields(node):
        if f.name == "span":
            continue
        old = getattr(node, f.name)
        new = _map(old, fn)
        if new is not old:
            changes[f.name] = new
    if changes:
        node = dataclasses.replace(node, **changes)
    return fn(node)


def _map(value: Any, fn: Callable[[Node], Node]) -> Any:
    if isinstance(value, Node):
        return transform(value, fn)
    if isinstance(value, tuple):
        items = tuple(_map(v, fn) for v in value)
        return value if all(a is b for a, b in zip(items, value)) else items
    return value


def pattern_variables(mr: MatchRecognize) -> set[str]:
    """Upper-case names of the primary pattern variables."""
    return {n.name.upper() for n in mr.pattern.walk() if isinstance(n, PatternVar)}


def variable_names(mr: MatchRecognize) -> set[str]:
    """Primary and subset variable names, upper-case."""
    return pattern_variables(mr) | {s.name.upper() for s in mr.subsets}


def _rewrite_ref(variables: set[str]) -> Callable[[Node], Node]:
    def fn(n: Node) -> Node:
        if (
            isinstance(n, FieldRef)
            and n.stream is None
            and len(n.path) >= 2
            and isinstance(n.path[0], KeyStep)
            and not n.path[0].bracket
            and isinstance(n.path[1], KeyStep)
            and n.path[0].key.upper() in variables
        ):
            return PatternFieldRef(var=n.path[0].key.upper(), path=n.path[1:], span=n.span)
        return n

    return fn


def rewrite_match(mr: MatchRecognize) -> MatchRecognize:
    """``mr`` with variable-qualified field selectors in MEASURES and DEFINE rewritten."""
    fn = _rewrite_ref(variable_names(mr))
    measures = tuple(transform(m, fn) for m in mr.measures)
    defines = tuple(transform(d, fn) for d in mr.defines)
    if all(a is b for a, b in zip(measures + defines, mr.measures + mr.defines)):
        return mr
    return dataclasses.replace(mr, measures=measures, defines=defines)


def rewrite_pattern_refs(select: Select) -> Select:
    """``select`` with its MATCH_RECOGNIZE items rewritten and a missing emitter of a MATCH_RECOGNIZE
    query made RSTREAM (see module doc)."""
    items = tuple(_prepare_match(f) if isinstance(f, MatchRecognize)
                  else _prepare_subquery(f) if isinstance(f, SubqueryRef)
                  else _prepare_window_source(f) if isinstance(f, WindowFunction)
                  else f for f in select.from_items)
    changes: dict[str, Any] = {}
    if not all(a is b for a, b in zip(items, select.from_items)):
        changes["from_items"] = items
    if select.emitter is None and select.emit is None and any(isinstance(f, MatchRecognize) for f in items):
        changes["emitter"] = "rstream"
    return dataclasses.replace(select, **changes) if changes else select


def _prepare_window_source(item: WindowFunction) -> WindowFunction:
    if item.source is None:
        return item
    source = _prepare_subquery(item.source)
    return item if source is item.source else dataclasses.replace(item, source=source)


def _prepare_match(mr: MatchRecognize) -> MatchRecognize:
    mr = rewrite_match(mr)
    if isinstance(mr.input, SubqueryRef):
        source = _prepare_subquery(mr.input)
        if source is not mr.input:
            mr = dataclasses.replace(mr, input=source)
    return mr


def _prepare_subquery(item: SubqueryRef) -> SubqueryRef:
    inner = prepare(item.select)
    return item if inner is item.select else dataclasses.replace(item, select=inner)


def prepare(stmt: Statement) -> Statement:
    """The statement with analyzer rewrites applied; the runtime calls ``prepare`` then ``analyze``."""
    if isinstance(stmt, Explain):
        inner = prepare(stmt.statement)
        return stmt if inner is stmt.statement else dataclasses.replace(stmt, statement=inner)
    if isinstance(stmt, CreateStreamAsSelect):
        inner = prepare(stmt.select)
        return stmt if inner is stmt.select else dataclasses.replace(stmt, select=inner)
    if isinstance(stmt, Select):
        return prepare_timeplus(prepare_history(rewrite_pattern_refs(stmt)))
    if isinstance(stmt, SelectUnion):
        selects = tuple(prepare_timeplus(rewrite_pattern_refs(s)) for s in stmt.selects)
        if all(a is b for a, b in zip(selects, stmt.selects)):
            return stmt
        return dataclasses.replace(stmt, selects=selects)
    return stmt

