"""Expression nodes: literals, field selectors (JSON Path), operators, calls, casts, constructors,
row metadata, and the MATCH_RECOGNIZE-only expression forms (navigation, CLASSIFIER, MATCH_NUMBER).

Names follow BQL words. Field selectors are case-sensitive; function names are stored lower-case.
"""
from __future__ import annotations

from .base import Node, node

# ---------------------------------------------------------------- JSON Path steps


@node
class KeyStep(Node):
    """``.key`` or ``["key"]`` (the first step of a path is always a KeyStep)."""

    key: str
    bracket: bool = False  # written as ["key"] (unparse keeps the form)


@node
class IndexStep(Node):
    """``[k]``; negative counts from the end."""

    index: int


@node
class SliceStep(Node):
    """``[start:end:step]``; any part may be None. A list-returning step."""

    start: int | None = None
    end: int | None = None
    step: int | None = None


@node
class RecursiveStep(Node):
    """``..key``: every value below the current node with this key. A list-returning step."""

    key: str


PathStep = KeyStep | IndexStep | SliceStep | RecursiveStep


class Expr(Node):
    """Marker base of expression nodes (not itself a dataclass field holder)."""

    __slots__ = ()


# ---------------------------------------------------------------- leaves


@node
class Literal(Expr):
    """A constant: None (NULL), bool, int, float or str. Parsed ints are range-checked to int64."""

    value: None | bool | int | float | str


@node
class FieldRef(Expr):
    """A field selector ``[stream:]path``. ``stream`` is the table prefix (alias) or None."""

    path: tuple[PathStep, ...]
    stream: str | None = None


@node
class Wildcard(Expr):
    """``*`` or ``stream:*`` (in a select list, an array/map constructor, or ``count(*)``)."""

    stream: str | None = None


@node
class TimestampRef(Expr):
    """Row metadata ``ts()`` or ``stream:ts()``: the tuple's timestamp."""

    stream: str | None = None


# ---------------------------------------------------------------- operators


@node
class UnaryOp(Expr):
    """``-x`` or ``NOT x``. ``op`` is ``"-"`` or ``"not"``."""

    op: str
    operand: Expr


@node
class BinaryOp(Expr):
    """Binary operator. ``op`` is one of ``or and = != < <= > >= || + - * / %`` (``<>`` normalised to ``!=``)."""

    op: str
    left: Expr
    right: Expr


@node
class IsNull(Expr):
    """``x IS [NOT] NULL``."""

    operand: Expr
    negated: bool = False


@node
class IsMissing(Expr):
    """``x IS [NOT] MISSING`` (the field selector finds no value)."""

    operand: Expr
    negated: bool = False


@node
class InList(Expr):
    """``x [NOT] IN (e1, e2, ...)``: ``x = e1 OR x = e2 OR ...`` with ``x`` evaluated once (SQL's
    definition, with BQL's ``=`` and its left-first OR: the items after the first equal one are not
    evaluated). ``NOT IN`` is ``NOT (x IN (...))``."""

    operand: Expr
    items: tuple[Expr, ...]
    negated: bool = False


@node
class Between(Expr):
    """``x [NOT] BETWEEN low AND high``: ``x >= low AND x <= high`` with ``x`` evaluated once (SQL's
    definition, with BQL's ordering rules and its left-first AND). ``NOT BETWEEN`` is its negation."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool = False


@node
class Like(Expr):
    """``x [NOT] LIKE pattern [ESCAPE c]``: ``%`` matches any run of characters, ``_`` exactly one, the
    escape character makes the next ``%``, ``_`` or itself literal. Strings only; NULL gives NULL."""

    operand: Expr
    pattern: Expr
    escape: Expr | None = None
    negated: bool = False


@node
class Cast(Expr):
    """``CAST(x AS t)`` or ``x::t``; ``type_name`` lower-case (bool int float string blob timestamp array map)."""

    operand: Expr
    type_name: str


@node
class SortKey(Node):
    """One ``expr [ASC|DESC]`` of an ORDER BY (in aggregates and in MATCH_RECOGNIZE)."""

    expr: Expr
    descending: bool = False


@node
class FunctionCall(Expr):
    """``name(args [ORDER BY ...])``. ``name`` is lower-case. ``count(*)`` has ``args=(Wildcard(),)``.

    Whether a call is an aggregate is decided by the function registry, not the parser.
    """

    name: str
    args: tuple[Expr, ...] = ()
    order_by: tuple[SortKey, ...] = ()
    distinct: bool = False  # ``count(DISTINCT x)``: an aggregate over distinct values (MATCH_RECOGNIZE only)


@node
class CallSelector(Expr):
    """A JSON Path applied to a function's result: ``f(x).key``, ``f(x)[0]``, ``f(x)..k`` (SensorBee's
    ``FuncAppSelector``). ``call`` is a FunctionCall; ``path`` never starts with a stream prefix."""

    call: Expr
    path: tuple[PathStep, ...]


@node
class ArrayLit(Expr):
    """``[e1, e2, ...]``; elements may be wildcards."""

    items: tuple[Expr, ...] = ()


@node
class MapLit(Expr):
    """``{"k": e, ...}``; keys are string literals, values may be wildcards."""

    items: tuple[tuple[str, Expr], ...] = ()


@node
class WhenClause(Node):
    """``WHEN cond THEN result`` of a CASE."""

    condition: Expr
    result: Expr


@node
class Case(Expr):
    """``CASE [operand] WHEN .. THEN .. [ELSE ..] END`` (SensorBee's code has it; the document does not)."""

    operand: Expr | None
    whens: tuple[WhenClause, ...]
    else_: Expr | None = None


# ---------------------------------------------------------------- MATCH_RECOGNIZE expression forms


@node
class PatternFieldRef(Expr):
    """``A.price`` inside MATCH_RECOGNIZE where ``A`` is a pattern or subset variable (upper-cased).

    The parser produces a FieldRef; the analyzer rewrites it to this node when the first key names a
    variable of the enclosing MATCH_RECOGNIZE. ``var`` None means the universal row pattern variable.
    """

    var: str | None
    path: tuple[PathStep, ...]


@node
class Navigation(Expr):
    """``PREV/NEXT/FIRST/LAST(expr [, offset])``; ``kind`` lower-case; offset default 1 (PREV/NEXT) or 0."""

    kind: str
    operand: Expr
    offset: int | None = None


@node
class RunningFinal(Expr):
    """``RUNNING expr`` or ``FINAL expr`` (``semantics`` is ``"running"`` or ``"final"``)."""

    semantics: str
    operand: Expr


@node
class Classifier(Expr):
    """``CLASSIFIER([var])``: the variable the row was mapped to."""

    var: str | None = None


@node
class MatchTime(Expr):
    """``MATCH_ROWTIME()`` (``kind`` ``row``: the time attribute of the match's last row) or
    ``MATCH_PROCTIME()`` (``proc``: the processing time); MATCH_RECOGNIZE MEASURES only."""

    kind: str


@node
class MatchNumber(Expr):
    """``MATCH_NUMBER()``: 1-based number of the match within its partition."""
