"""The native tier's WHERE, symbolically: a stage's condition as a tree ``native_stage`` builds columns from.

``predicate(e, value)`` turns a WHERE into nested tuples — ``("and"|"or", p, q)``, ``("not", p)``,
``("cmp", op, a, b)`` over operands ``("field", slot)``, ``("arith", node)`` (``native_arith``),
``("text", node)`` (``native_text``), ``("num", float)``, ``("str", s)`` or ``("bool", b)``, ``("isnull", slot)``, ``("ismissing", slot)`` and
``("truth", slot)`` (a bool field as the condition; a condition an earlier stage projected is its tree) — or raises ``Unsupported`` saying what does not
compile. ``value(field_ref)`` is the compiling stage's ``_Value`` of a field (``native_stage``). Which rows
each form may decide (its guards) is ``native_stage._build``'s part.
"""
from __future__ import annotations

import math
from typing import Any

from sbpy.bql.ast import (
    Between,
    BinaryOp,
    FieldRef,
    FunctionCall,
    InList,
    IsMissing,
    IsNull,
    Literal,
    UnaryOp,
)

from .native_arith import EXACT, FUNCTIONS, describe

_CMP = {"=": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class Unsupported(Exception):
    """The chain uses something the native tier does not compile (the message says what)."""


def what(e: Any) -> str:
    """A few words for an expression the native tier does not compile."""
    if isinstance(e, (BinaryOp, UnaryOp)):
        return f"the operator {e.op.upper()}"
    if isinstance(e, FunctionCall) and e.name in FUNCTIONS:  # (not compiled: the topology registered its own)
        return f"{describe(e)} (the topology's own, not the built-in)"
    return describe(e)


def is_condition(e: Any) -> bool:
    """Whether ``e`` is a condition at its top (a comparison, AND/OR/NOT, BETWEEN, IN, IS NULL / MISSING):
    in a select list, its bool is the value."""
    if isinstance(e, BinaryOp):
        return e.op.lower() in ("and", "or") or e.op.lower() in _CMP
    if isinstance(e, UnaryOp):
        return e.op.lower() == "not"
    return isinstance(e, (Between, InList, IsNull, IsMissing))


def predicate(e: Any, value: Any) -> tuple:
    """The symbolic condition of WHERE ``e`` (see the module doc), or ``Unsupported``."""
    if isinstance(e, BinaryOp):
        op = e.op.lower()
        if op in ("and", "or"):
            return (op, predicate(e.left, value), predicate(e.right, value))
        if op in _CMP:
            return _cmp(_CMP[op], _operand(e.left, value), _operand(e.right, value))
    if isinstance(e, UnaryOp) and e.op.lower() == "not":
        return ("not", predicate(e.operand, value))
    if isinstance(e, (Between, InList, IsNull, IsMissing)):
        p = _sql_predicate(e, value)
        return ("not", p) if e.negated else p
    if isinstance(e, FieldRef):  # a bool field as the condition (any other value: the kernel's error)
        val = value(e)
        if val.pred is not None:  # a condition an earlier stage projected: its bool
            return val.pred
        x = _value_operand(val)
        if x[0] != "field":
            raise Unsupported("a condition other than a field of the input")
        return ("truth", x[1])
    raise Unsupported(f"{what(e)} in WHERE (only comparisons, BETWEEN, IN, IS [NOT] NULL / MISSING, bool fields "
                      "and AND/OR/NOT compile)")


def _cmp(op: str, a: tuple, b: tuple) -> tuple:
    """A comparison of two operands, one of them a field, a number or a string expression."""
    kinds = {a[0], b[0]}
    if kinds.isdisjoint(("field", "arith", "text")):
        raise Unsupported("a comparison of two literals")
    if kinds == {"arith", "str"}:
        raise Unsupported("a comparison of arithmetic with a string")
    if "bool" in kinds and kinds != {"field", "bool"}:
        raise Unsupported("a comparison of a bool literal with other than a field")
    if "text" in kinds and not kinds <= {"text", "field", "str"}:
        raise Unsupported("a comparison of a string expression with other than a string")
    return ("cmp", op, a, b)


def _sql_predicate(e: Any, value: Any) -> tuple:
    """``BETWEEN``, ``IN`` and ``IS NULL`` (not negated) as the predicates they equal on the values the
    guards let through (present, never NULL, exact doubles or strings without escapes): ``x BETWEEN lo
    AND hi`` is ``x >= lo AND x <= hi`` (``predicates.between``); ``x IN (literals)`` is ``x = v1 OR x = v2
    ...`` when the literals are all numbers or all strings (``predicates.in_constants``: its sets hold the
    items of ``x``'s type, and a miss is false without a NULL item); ``x IS NULL`` is ``x``'s class ``n``;
    ``x IS MISSING`` is no class (the path finds nothing: a step absent or through a value of another kind,
    where the kernel's path gives MISSING too)."""
    if isinstance(e, Between):
        x, low, high = (_operand(v, value) for v in (e.operand, e.low, e.high))
        if "bool" in (low[0], high[0]):
            raise Unsupported("BETWEEN bools")
        return ("and", _cmp(">=", x, low), _cmp("<=", x, high))
    if isinstance(e, InList):
        x = _operand(e.operand, value)
        items = [_operand(i, value) if type(i) is Literal else None for i in e.items]
        if x[0] != "field" or None in items or len({kind for kind, _v in items}) != 1:
            raise Unsupported("IN over other than a field and literals all numbers or all strings")
        p: tuple = ("cmp", "==", x, items[0])
        for item in items[1:]:
            p = ("or", p, ("cmp", "==", x, item))
        return p
    x = _operand(e.operand, value)
    if x[0] != "field":
        raise Unsupported("IS NULL / MISSING of other than a field of the input")
    return ("isnull" if isinstance(e, IsNull) else "ismissing", x[1])


def _operand(e: Any, value: Any) -> tuple:
    if isinstance(e, Literal):
        v = e.value
        if type(v) is int and abs(v) <= EXACT:
            return ("num", float(v))
        if type(v) is float and math.isfinite(v):
            return ("num", v)
        if type(v) is str:
            return ("str", v)
        if type(v) is bool:
            return ("bool", v)
        raise Unsupported("a comparison with a literal of another type")
    return _value_operand(value(e))


def _value_operand(val: Any) -> tuple:
    """The operand of a field's ``_Value`` (``native_stage``)."""
    if val.pred is not None:
        raise Unsupported("a comparison with a condition an earlier stage computed")
    if val.node is not None:
        return ("arith", val.node)
    if val.text is not None:
        return ("text", val.text)
    if val.slot is None:
        raise Unsupported("a comparison with a literal projected by an earlier stage")
    return ("field", val.slot)
