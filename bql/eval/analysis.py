"""Static questions about expressions for the analyzer and the kernel: is a call an aggregate, does an
expression contain one, is it volatile, is it constant (foldable)."""
from __future__ import annotations

from typing import Any, Iterator

from ..ast import (
    FieldRef, FunctionCall, Literal, Node, TimestampRef, Wildcard,
)
from ..ast import expressions as _ex


def _registry(registry: Any) -> Any:
    if registry is None:
        from ..functions import builtin_registry

        return builtin_registry()
    return registry


def is_aggregate_call(call: Any, registry: Any = None) -> bool:
    """True when ``call`` is a FunctionCall of a registered aggregate function."""
    if type(call) is not FunctionCall:
        return False
    spec = _registry(registry).get(call.name)
    return bool(spec is not None and spec.aggregate)


def aggregate_calls(expr: Any, registry: Any = None) -> Iterator[FunctionCall]:
    """The outermost aggregate calls in ``expr`` (pre-order; arguments of an aggregate not searched)."""
    reg = _registry(registry)
    stack = [expr]
    while stack:
        e = stack.pop()
        if type(e) is FunctionCall and is_aggregate_call(e, reg):
            yield e
            continue
        if isinstance(e, Node):
            stack.extend(reversed(list(e.children())))


def contains_aggregate(expr: Any, registry: Any = None) -> bool:
    """True when ``expr`` contains an aggregate call anywhere."""
    return next(aggregate_calls(expr, registry), None) is not None


def is_volatile(expr: Any, registry: Any = None) -> bool:
    """True when ``expr`` calls a volatile function (``now()``, ``random()``, ``clock_timestamp()`` ...)
    or an unknown one (a UDF registered later is assumed volatile)."""
    reg = _registry(registry)
    for e in expr.walk():
        if type(e) is FunctionCall:
            spec = reg.get(e.name)
            if spec is None or spec.volatile or spec.context:
                return True
    return False


_ROW_NODES = {FieldRef, Wildcard, TimestampRef}
_MATCH_NODES = tuple(
    getattr(_ex, n) for n in ("PatternFieldRef", "Navigation", "RunningFinal", "Classifier", "MatchNumber",
                            "MatchTime")
    if hasattr(_ex, n)
)


def reads_row(expr: Any) -> bool:
    """True when ``expr`` reads a row: a field, ``*``, ``ts()`` or a MATCH_RECOGNIZE form."""
    return any(type(e) in _ROW_NODES or isinstance(e, _MATCH_NODES) for e in expr.walk())


def is_constant(expr: Any, registry: Any = None) -> bool:
    """True when ``expr`` reads no row (fields, ``*``, ``ts()``, MATCH_RECOGNIZE forms), calls no
    aggregate and no volatile or unknown function: its value can be computed once."""
    if type(expr) is Literal:
        return True
    reg = _registry(registry)
    for e in expr.walk():
        t = type(e)
        if t in _ROW_NODES or isinstance(e, _MATCH_NODES):
            return False
        if t is FunctionCall:
            spec = reg.get(e.name)
            if spec is None or spec.aggregate or spec.volatile or spec.context or spec.stream_only:
                return False
    return True
