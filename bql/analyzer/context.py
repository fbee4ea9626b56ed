"""Shared state and tree helpers for the analyzer rules.

A rule is a pure function ``rule(stmt, ctx)``: it raises ``BQLAnalysisError`` on the first violation
and may append ``AnalysisWarning`` objects to ``ctx.warnings``. The helpers here answer the questions
most rules share: which SELECTs a statement holds, which calls are aggregates, and how to walk an
expression without descending into a nested scope (an aggregate's arguments, a MATCH_RECOGNIZE clause).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..ast import (
    Classifier,
    CreateStreamAsSelect,
    Expr,
    FunctionCall,
    MatchNumber,
    MatchRecognize,
    Navigation,
    Node,
    PatternFieldRef,
    RunningFinal,
    Select,
    SelectUnion,
    Statement,
    SubqueryRef,
    WindowFunction,
)
from ..errors import BQLAnalysisError, BQLError, Span

# Built-in aggregates and which of their parameters are aggregation parameters (SensorBee's list).
# Used when no function registry is available; a registry entry always wins.
BUILTIN_AGGREGATES: dict[str, tuple[bool, ...]] = {
    "array_agg": (True,),
    "avg": (True,),
    "bool_and": (True,),
    "bool_or": (True,),
    "count": (True,),
    "json_object_agg": (True, True),
    "max": (True,),
    "median": (True,),
    "min": (True,),
    "string_agg": (True, False),
    "sum": (True,),
}

MATCH_ONLY = (PatternFieldRef, Navigation, RunningFinal, Classifier, MatchNumber)


@dataclass(frozen=True, slots=True)
class AnalysisWarning:
    """A statement that is accepted but probably not what the user meant."""

    message: str
    span: Span | None = None

    def __str__(self) -> str:
        return self.message


@dataclass
class Context:
    """What a rule may consult: the statement text, the function registry, collected warnings."""

    text: str | None = None
    registry: Any = None
    warnings: list[AnalysisWarning] = field(default_factory=list)

    def warn(self, message: str, node: Node | None = None) -> None:
        self.warnings.append(AnalysisWarning(message, node.span if node is not None else None))

    def lookup(self, name: str) -> Any:
        """The registry's spec for a function, or None (unknown, or no registry)."""
        if self.registry is None:
            return None
        get = getattr(self.registry, "get", None)
        if get is not None:
            return get(name)
        try:
            return self.registry.lookup(name)
        except (KeyError, LookupError, BQLError):
            return None

    def is_aggregate(self, call: FunctionCall) -> bool:
        spec = self.lookup(call.name)
        if spec is not None:
            return bool(getattr(spec, "aggregate", False))
        return call.name in BUILTIN_AGGREGATES

    def aggregation_params(self, call: FunctionCall) -> tuple[bool, ...]:
        """Per argument: True if it is an aggregation parameter (evaluated per row of the group)."""
        n = len(call.args)
        spec = self.lookup(call.name)
        flags: Any = getattr(spec, "agg_params", None) if spec is not None else None
        if flags is None:
            flags = BUILTIN_AGGREGATES.get(call.name)
        if flags is None:
            return (True,) * n
        flags = tuple(flags)
        if flags and all(isinstance(f, bool) for f in flags):
            return tuple(flags[i] if i < len(flags) else flags[-1] for i in range(n))
        # a collection of indexes of the aggregation parameters
        return tuple(i in flags for i in range(n))


def fail(message: str, node: Node | None = None, span: Span | None = None) -> BQLAnalysisError:
    """Build the error for ``node`` (callers ``raise fail(...)``)."""
    return BQLAnalysisError(message, span if span is not None else getattr(node, "span", None))


def quote(name: str) -> str:
    return f"'{name}'"


def selects_of(stmt: Statement) -> list[Select]:
    """Every SELECT of a statement: a UNION ALL gives each branch, a subquery in FROM (a CTE's
    reference, the input of ``(select) MATCH_RECOGNIZE``) its own SELECTs after the one reading it."""
    if isinstance(stmt, CreateStreamAsSelect):
        stmt = stmt.select
    if isinstance(stmt, Select):
        out = [stmt]
        for item in stmt.from_items:
            if isinstance(item, MatchRecognize):
                item = item.input
            elif isinstance(item, WindowFunction) and item.source is not None:
                item = item.source
            if isinstance(item, SubqueryRef):
                out += selects_of(item.select)
        return out
    if isinstance(stmt, SelectUnion):
        return [s for branch in stmt.selects for s in selects_of(branch)]
    return []


def match_items(select: Select) -> list[MatchRecognize]:
    return [f for f in select.from_items if isinstance(f, MatchRecognize)]


def walk(node: Node | None, stop: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """Pre-order walk; children of a node for which ``stop(node)`` is true are not visited."""
    if node is None:
        return
    yield node
    if stop is not None and stop(node):
        return
    for child in node.children():
        yield from walk(child, stop)


def walk_exprs(exprs: Any, stop: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """Walk each of several expressions (None entries skipped)."""
    for e in exprs:
        yield from walk(e, stop)


def select_exprs(select: Select) -> list[tuple[str, Expr]]:
    """The expressions of a SELECT outside its FROM items, labelled by clause."""
    out: list[tuple[str, Expr]] = [("select", p.expr) for p in select.projections]
    if select.left_join_on is not None:
        out.append(("on", select.left_join_on))
    if select.where is not None:
        out.append(("where", select.where))
    out.extend(("group by", g) for g in select.group_by)
    if select.having is not None:
        out.append(("having", select.having))
    out.extend(("partition by", e) for e in select.partition_by)  # Timeplus substreams
    return out
