"""Hash keys for the equality conjuncts of a join (``a:k = b:k``) and the WHERE-clause analysis.

``join_key(v)`` maps a value to a hashable key such that ``a = b`` is true exactly when
``join_key(a) == join_key(b)``: numbers become floats (BQL compares int with float as floats; ints
beyond 2**53 are ``Unindexable``, their floats would be equal for unequal ints), strings / bools /
blobs / timestamps are tagged by type, arrays and maps compare deeply with NULL equal to NULL inside.
NULL at the top, and any NaN, can never be equal: those values get ``NO_MATCH`` and are not indexed.
Values of other Python types raise ``Unindexable``.

``split_where`` cuts a WHERE clause into its top-level ``AND`` conjuncts and sorts them into
one-alias conjuncts, equalities between two aliases, constants and the rest (residual).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from ...ast import BinaryOp, Expr, FieldRef, TimestampRef, Wildcard

NO_MATCH = None  # the key of a value that equals nothing
_EXACT = 1 << 53  # ints up to this magnitude convert to float exactly


class Unindexable(Exception):
    """A value whose equality the join index does not model (the plain enumeration handles it)."""


def join_key(value: Any) -> Any:
    """The bucket key of a top-level equality operand (``NO_MATCH`` for NULL and NaN)."""
    if value is None:
        return NO_MATCH
    try:
        return _inner(value)
    except _NaN:
        return NO_MATCH


class _NaN(Exception):
    pass


def _inner(v: Any) -> Any:
    t = type(v)
    if t is int:
        if -_EXACT <= v <= _EXACT:
            return float(v)
        raise Unindexable("an int beyond 2**53")  # its float would merge it with its neighbours
    if t is float:
        if v != v:
            raise _NaN
        return v
    if t is str:
        return ("s", v)
    if v is None:
        return ("null",)
    if t is bool:
        return ("b", v)
    if t is list:
        return ("a", tuple(_inner(x) for x in v))
    if t is dict:
        return ("m", frozenset((k, _inner(x)) for k, x in v.items()))
    if t is bytes:
        return ("x", v)
    if t is _dt.datetime:
        return ("t", v)
    raise Unindexable(type(v).__name__)


# ---------------------------------------------------------------- WHERE analysis


def aliases_read(expr: Any, aliases: tuple[str, ...]) -> frozenset[str]:
    """The FROM aliases an expression reads (fields, ``ts()``, ``*``)."""
    found: set[str] = set()
    for node in expr.walk():
        t = type(node)
        if t is FieldRef or t is TimestampRef or t is Wildcard:
            stream = node.stream
            if stream is not None:
                found.add(stream)
            elif t is Wildcard and len(aliases) > 1:
                found.update(aliases)
            elif len(aliases) == 1:
                found.add(aliases[0])
    return frozenset(found)


def conjuncts(expr: Expr) -> list[Expr]:
    """The operands of the top-level ``AND`` chain, left to right."""
    if isinstance(expr, BinaryOp) and expr.op.lower() == "and":
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


@dataclass
class WhereParts:
    """A WHERE clause sorted by what its conjuncts read."""

    single: list[tuple[str, Expr]] = field(default_factory=list)  # (alias, conjunct)
    equalities: list[tuple[str, Expr, str, Expr]] = field(default_factory=list)  # (alias, lhs, alias, rhs)
    constants: list[Expr] = field(default_factory=list)
    residual: list[Expr] = field(default_factory=list)


def split_where(where: Expr, aliases: tuple[str, ...]) -> WhereParts:
    parts = WhereParts()
    for c in conjuncts(where):
        read = aliases_read(c, aliases)
        if not read:
            parts.constants.append(c)
        elif len(read) == 1:
            parts.single.append((next(iter(read)), c))
        elif isinstance(c, BinaryOp) and c.op == "=":
            left, right = aliases_read(c.left, aliases), aliases_read(c.right, aliases)
            if len(left) == 1 and len(right) == 1 and left != right:
                parts.equalities.append((next(iter(left)), c.left, next(iter(right)), c.right))
            else:
                parts.residual.append(c)
        else:
            parts.residual.append(c)
    return parts
