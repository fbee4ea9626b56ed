"""Parse tree → AST for expressions: literals, operators, calls, casts, constructors and JSON Path
field selectors, including the static checks SensorBee's parser makes (int64 range, type names,
statically invalid slices, chained list-returning steps).
"""
from __future__ import annotations

from lark import Token

from .ast import (
    ArrayLit, Between, BinaryOp, CallSelector, Case, Cast, FieldRef, FunctionCall, IndexStep, InList,
    IsMissing, IsNull, KeyStep, Like, Literal, MapLit, RecursiveStep, RunningFinal, SliceStep, SortKey, TimestampRef,
    UnaryOp, Wildcard, WhenClause,
)
from .transform_base import INT64_MAX, fail, ident, present, span_of

TYPE_NAMES = frozenset({"bool", "int", "float", "string", "blob", "timestamp", "array", "map"})


def unquote(tok: Token) -> str:
    """The value of a double-quoted string token (``""`` is one ``"``)."""
    return str(tok)[1:-1].replace('""', '"')


def int_value(tok: Token) -> int:
    """The value of an INT token; beyond int64 (checked on the digits first: Python refuses to
    convert strings of more than 4300 digits) is a syntax error."""
    digits = str(tok)
    if len(digits.lstrip("0")) > len(str(INT64_MAX)) or int(digits) > INT64_MAX:
        shown = digits if len(digits) <= 40 else f"{digits[:20]}...({len(digits)} digits)"
        raise fail(f"integer literal '{shown}' is out of the int64 range", tok)
    return int(digits)


def type_name(tok: Token) -> str:
    name = str(tok).lower()
    if name not in TYPE_NAMES:
        raise fail(f"unknown type '{tok}' (expected one of bool, int, float, string, blob, "
                   "timestamp, array, map)", tok)
    return name


def check_path(steps: tuple) -> None:
    """Reject JSON paths that SensorBee rejects statically."""
    listy = [s for s in steps if isinstance(s, (SliceStep, RecursiveStep))]
    if len(listy) > 1:
        raise fail("a field selector cannot chain two list-returning steps (slices or '..')",
                   listy[1])
    for s in steps:
        if not isinstance(s, SliceStep):
            continue
        if s.step == 0:
            raise fail("a slice step cannot be zero", s)
        if (s.start is not None and s.end is not None and (s.step is None or s.step > 0)
                and (s.start >= 0) == (s.end >= 0) and s.start > s.end):
            raise fail(f"slice start {s.start} is greater than its end {s.end}", s)


class ExpressionRules:
    """Transformer rules for section 7–9 of the grammar (mixed into ``BQLTransformer``)."""

    # ------------------------------------------------------------------ literals

    def int_lit(self, meta, tok):
        return Literal(int_value(tok), span=span_of(tok))

    def float_lit(self, meta, tok):
        value = float(str(tok))
        if value in (float("inf"), float("-inf")):  # ast.go NewFloatLiteral: ParseFloat's range error panics
            raise fail(f"float literal {tok} is out of the range of float64", tok)
        return Literal(value, span=span_of(tok))

    def string_lit(self, meta, tok):
        return Literal(unquote(tok), span=span_of(tok))

    def true_lit(self, meta):
        return Literal(True, span=span_of(meta))

    def false_lit(self, meta):
        return Literal(False, span=span_of(meta))

    def null_lit(self, meta):
        return Literal(None, span=span_of(meta))

    # ------------------------------------------------------------------ operators

    def or_op(self, meta, left, right):
        return BinaryOp("or", left, right, span=span_of(meta))

    def and_op(self, meta, left, right):
        return BinaryOp("and", left, right, span=span_of(meta))

    def not_op(self, meta, operand):
        return UnaryOp("not", operand, span=span_of(meta))

    def compare(self, meta, left, op, right):
        return BinaryOp(op, left, right, span=span_of(meta))

    def in_list(self, meta, operand, negated, *items):
        return InList(operand, tuple(items), negated, span=span_of(meta))

    def like(self, meta, operand, negated, pattern, escape=None):
        return Like(operand, pattern, escape, negated, span=span_of(meta))

    def between(self, meta, operand, negated, low, high):
        return Between(operand, low, high, negated, span=span_of(meta))

    def comp_op(self, meta, tok):
        op = str(tok)
        return "!=" if op == "<>" else op

    def add_op(self, meta, tok):
        return str(tok)

    mul_op = add_op

    def concat(self, meta, left, right):
        return BinaryOp("||", left, right, span=span_of(meta))

    def binary(self, meta, left, op, right):
        return BinaryOp(op, left, right, span=span_of(meta))

    def not_kw(self, meta, *toks):
        return bool(toks)

    negation = not_kw

    def is_null(self, meta, operand, negated):
        return IsNull(operand, negated, span=span_of(meta))

    def is_missing(self, meta, operand, negated):
        return IsMissing(operand, negated, span=span_of(meta))

    def neg(self, meta, operand):
        # `-36` is the literal -36; the int64 check already ran on the unsigned digits, so
        # -9223372036854775808 is an error as in SensorBee.
        if (isinstance(operand, Literal) and type(operand.value) in (int, float)
                and operand.span is not None and self.text[operand.span.start].isdigit()):
            return Literal(-operand.value, span=span_of(meta))
        return UnaryOp("-", operand, span=span_of(meta))

    def pos(self, meta, operand):
        # unary plus takes numbers (and NULL) only, as every arithmetic operator: +4 is 4, +"a" an error
        if isinstance(operand, Literal) and type(operand.value) in (int, float):
            return operand
        return UnaryOp("+", operand, span=span_of(meta))

    def cast_op(self, meta, operand, tok):
        return Cast(operand, type_name(tok), span=span_of(meta))

    def cast_fn(self, meta, operand, tok):
        return Cast(operand, type_name(tok), span=span_of(meta))

    # ------------------------------------------------------------------ calls and constructors

    def func_call(self, meta, name, *rest):
        items = present(list(rest))
        order = ()
        if items and isinstance(items[-1], tuple):
            order = items.pop()
        fname = ident(name)
        if fname == "ts" and not items and not order:
            return TimestampRef(None, span=span_of(meta))
        return FunctionCall(fname, tuple(items), order, span=span_of(meta))

    def func_call_distinct(self, meta, name, arg):
        return FunctionCall(ident(name), (arg,), (), True, span=span_of(meta))

    def call_selector(self, meta, call, *steps):
        if not isinstance(call, FunctionCall):  # ts() takes no selector
            raise fail("a selector can only follow a function call", call)
        check_path(steps)
        return CallSelector(call, tuple(steps), span=span_of(meta))

    def order_by(self, meta, *keys):
        return tuple(keys)

    def sort_key(self, meta, expr, direction=None):
        return SortKey(expr, direction == "desc", span=span_of(meta))

    def sort_dir(self, meta, tok):
        return str(tok).lower()

    def running_final(self, meta, tok, call):
        return RunningFinal(str(tok).lower(), call, span=span_of(meta))

    def wildcard(self, meta):
        return Wildcard(None, span=span_of(meta))

    def stream_wildcard(self, meta, stream):
        return Wildcard(ident(stream), span=span_of(meta))

    def stream_ts(self, meta, stream, fn):
        if str(fn).lower() != "ts":
            raise fail(f"unexpected '{fn}()' after a stream prefix (only 'ts()' is allowed)", fn)
        return TimestampRef(ident(stream), span=span_of(meta))

    def array_lit(self, meta, *items):
        return ArrayLit(tuple(present(list(items))), span=span_of(meta))

    def map_lit(self, meta, *items):
        return MapLit(tuple(present(list(items))), span=span_of(meta))

    def map_item(self, meta, key, value):
        return (unquote(key), value)

    def when_clause(self, meta, cond, result):
        return WhenClause(cond, result, span=span_of(meta))

    def else_clause(self, meta, expr):
        return ("else", expr)

    def case_searched(self, meta, *parts):
        return self._case(meta, None, parts)

    def case_simple(self, meta, operand, *parts):
        return self._case(meta, operand, parts)

    def _case(self, meta, operand, parts) -> Case:
        whens = tuple(p for p in parts if isinstance(p, WhenClause))
        else_ = next((p[1] for p in parts if isinstance(p, tuple)), None)
        return Case(operand, whens, else_, span=span_of(meta))

    # ------------------------------------------------------------------ field selectors

    def field_ref(self, meta, *children):
        stream = None
        items = list(children)
        if isinstance(items[0], Token):
            stream = ident(items.pop(0))
        steps = tuple(items)
        check_path(steps)
        return FieldRef(steps, stream, span=span_of(meta))

    def head_key(self, meta, tok):
        return KeyStep(str(tok), span=span_of(tok))

    def key_step(self, meta, tok):
        return KeyStep(str(tok), span=span_of(meta))

    def bracket_step(self, meta, tok):
        return KeyStep(unquote(tok), True, span=span_of(meta))

    def index_step(self, meta, value):
        if isinstance(value, Token):
            value = int_value(value)
        return IndexStep(value, span=span_of(meta))

    def slice_step(self, meta, start, end):
        return SliceStep(start, end, None, span=span_of(meta))

    def slice_step3(self, meta, start, end, step):
        return SliceStep(start, end, step, span=span_of(meta))

    def recursive_step(self, meta, tok):
        return RecursiveStep(str(tok), span=span_of(meta))

    def recursive_bracket_step(self, meta, tok):
        return RecursiveStep(unquote(tok), span=span_of(meta))

    def sint(self, meta, tok):
        return int_value(tok)

    def neg_sint(self, meta, tok):
        return -int_value(tok)

