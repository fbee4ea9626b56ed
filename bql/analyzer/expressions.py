"""Expression-level rules that hold anywhere in a statement.

- ``CAST(x AS array|map)`` is an error (SensorBee has no such conversion).
- Built-in functions are called with a valid number of arguments (unknown functions are fine: a
  plugin may provide them at run time).
- MATCH_RECOGNIZE-only forms (navigation, CLASSIFIER, MATCH_NUMBER, RUNNING/FINAL) stay inside it.
- EVAL without ON cannot read fields; EVAL never aggregates, never evaluates a bare ``*`` and has no
  ``ts()`` (the ON map carries no timestamp).
- ``*`` / ``s:*`` stand only where SensorBee's grammar has ``ExpressionOrWildcard``: a select-list item,
  a function argument, an array element, a map value and a ``THEN`` result -- never as an operand
  (``* IS NULL``, ``WHERE *``, ``* + 1`` are syntax errors in bql.peg). As an argument it is the
  tuple's map for any function (``array_agg(*)``, ``encode_json(*)``; SensorBee's
  ParserExprToMaybeAggregate replaces it by 1 for ``count`` only).
- ``IS [NOT] MISSING`` applies to a field selector only (``a + 2 IS MISSING`` is invalid: SensorBee's
  grammar has ``RowValue IS [NOT] MISSING`` and the reference document says so).
"""
from __future__ import annotations

from ..ast import (
    ArrayLit,
    Cast,
    Classifier,
    Eval,
    FieldRef,
    FunctionCall,
    IsMissing,
    MapLit,
    MatchNumber,
    Navigation,
    PatternFieldRef,
    RunningFinal,
    Statement,
    TimestampRef,
    WhenClause,
    Wildcard,
)
from .aggregates import field_text
from .context import BUILTIN_AGGREGATES, Context, fail, select_exprs, selects_of, walk

CAST_TYPES = ("bool", "int", "float", "string", "blob", "timestamp")


def check_casts(stmt: Statement, ctx: Context) -> None:
    for n in walk(stmt):
        if isinstance(n, Cast):
            t = n.type_name.lower()
            if t in ("array", "map"):
                raise fail(f"cannot cast to {t}: only bool, int, float, string, blob and timestamp are allowed", n)
            if t not in CAST_TYPES:
                raise fail(f"unknown type '{n.type_name}' in a cast", n)


def _arity(spec, name: str) -> tuple[int, int | None] | None:
    """(min, max) argument count of a function, or None when unknown."""
    if spec is not None:
        arity = getattr(spec, "arity", None)
        if isinstance(arity, int) and not isinstance(arity, bool):
            return arity, arity
        if isinstance(arity, tuple) and len(arity) == 2:
            return arity[0], arity[1]
        lo, hi = getattr(spec, "min_args", None), getattr(spec, "max_args", None)
        if isinstance(lo, int):
            return lo, hi if isinstance(hi, int) else None
        return None
    if name in BUILTIN_AGGREGATES:
        n = len(BUILTIN_AGGREGATES[name])
        return n, n
    return None


def _args(n: int) -> str:
    return f"{n} argument" + ("" if n == 1 else "s")


def check_arity(stmt: Statement, ctx: Context) -> None:
    for n in walk(stmt):
        if not isinstance(n, FunctionCall):
            continue
        arity = _arity(ctx.lookup(n.name), n.name)
        if arity is None:
            continue
        lo, hi = arity
        got = len(n.args)
        if got < lo or (hi is not None and got > hi):
            want = _args(lo) if lo == hi else (f"at least {_args(lo)}" if hi is None else f"{lo} to {_args(hi)}")
            raise fail(f"function '{n.name}' takes {want}, got {got}", n)
        if n.order_by and not ctx.is_aggregate(n):
            raise fail(f"ORDER BY can only be used in an aggregate call, and '{n.name}' is not one", n)


_MATCH_ONLY_NAMES = {
    Navigation: lambda n: n.kind.upper(),
    Classifier: lambda n: "CLASSIFIER",
    MatchNumber: lambda n: "MATCH_NUMBER",
    RunningFinal: lambda n: n.semantics.upper(),
    PatternFieldRef: lambda n: f"pattern variable '{n.var}'",
}


def check_match_only_forms(stmt: Statement, ctx: Context) -> None:
    """Navigation & co. outside a MATCH_RECOGNIZE clause are errors."""
    for select in selects_of(stmt):
        for _, expr in select_exprs(select):
            for n in walk(expr):
                name = _MATCH_ONLY_NAMES.get(type(n))
                if name is not None:
                    raise fail(f"{name(n)} can only be used inside MATCH_RECOGNIZE", n)


def check_eval(stmt: Statement, ctx: Context) -> None:
    if not isinstance(stmt, Eval):
        return
    if isinstance(stmt.expr, Wildcard):  # SensorBee: EvalStmt <- "EVAL" Expression (no wildcard)
        raise fail("EVAL cannot evaluate '*'; use a map such as {\"x\": *} with ON", stmt.expr)
    for n in walk(stmt.expr):
        if isinstance(n, TimestampRef) and stmt.on is not None:
            # SensorBee's RunEvalStmt reads ts() from the ON map, which has no timestamp
            raise fail("ts() cannot be used in EVAL: the ON map has no timestamp", n)
        if isinstance(n, FunctionCall) and ctx.is_aggregate(n):
            raise fail(f"aggregate function '{n.name}' cannot be used in EVAL", n)
        if stmt.on is None:
            if isinstance(n, FieldRef):
                raise fail(f"EVAL cannot refer to field '{field_text(n)}' without ON", n)
            if isinstance(n, (Wildcard, TimestampRef)):
                raise fail("EVAL cannot refer to the input tuple without ON", n)
        name = _MATCH_ONLY_NAMES.get(type(n))
        if name is not None:
            raise fail(f"{name(n)} can only be used inside MATCH_RECOGNIZE", n)


def check_is_missing(stmt: Statement, ctx: Context) -> None:
    for n in walk(stmt):
        if isinstance(n, IsMissing) and not isinstance(n.operand, (FieldRef, PatternFieldRef)):
            raise fail("IS [NOT] MISSING can only be applied to a field selector, not to an expression", n)


def _check_stars(node, allowed: bool) -> None:
    if isinstance(node, Wildcard):
        if not allowed:
            raise fail("'*' can only be a select-list item, a function argument, an array element, "
                       "a map value or a THEN result", node)
        return
    if isinstance(node, FunctionCall):
        ok: set[int] | None = {id(a) for a in node.args}
    elif isinstance(node, (ArrayLit, MapLit)):
        ok = None
    elif isinstance(node, WhenClause):
        ok = {id(node.result)}
    else:
        ok = set()
    for child in node.children():
        _check_stars(child, ok is None or id(child) in ok)


def check_wildcard_positions(stmt: Statement, ctx: Context) -> None:
    """bql.peg: ``ExpressionOrWildcard`` only in Projection, FuncParams, ArrayExpr, KeyValuePair and
    WhenThenPair's THEN; everywhere else ``*`` is not an expression."""
    if isinstance(stmt, Eval):
        if not isinstance(stmt.expr, Wildcard):  # a bare EVAL * has its own message (check_eval)
            _check_stars(stmt.expr, True)
        return
    for select in selects_of(stmt):
        for clause, expr in select_exprs(select):
            _check_stars(expr, clause == "select")
