"""AST → canonical BQL text for expressions and row patterns (``unparse.py`` adds statements).

Minimal parentheses by operator precedence, upper-case keywords, strings re-escaped. Dispatch is by
node class name (``_<ClassName>`` functions collected in ``EXPR_RULES``); an unmapped node fails
loudly with ``TypeError``.
"""
from __future__ import annotations

import math
import re
from decimal import Decimal

from .base import Node
from .expressions import (
    BinaryOp, IndexStep, KeyStep, Literal, RecursiveStep, SliceStep, UnaryOp,
)
from .patterns import PatternAlt, PatternConcat, PatternQuantified

__all__ = ["EXPR_RULES", "expr", "pattern", "path_text", "quote", "unparse_expr"]

_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
# Words that start an expression (or, for DISTINCT, a select list), so a first path step spelled so
# must be written ["word"].
_EXPR_WORDS = frozenset({"not", "case", "cast", "true", "false", "null", "distinct"})

# Expression precedence, lowest first (see section 7 of grammar/bql.lark).
OR, AND, NOT, CMP, CONCAT, IS, ADD, MUL, UNARY, CAST, PRIMARY = range(1, 12)
_BINARY = {
    "or": (OR, OR, AND), "and": (AND, AND, NOT), "||": (CONCAT, CONCAT, IS),
    "+": (ADD, ADD, MUL), "-": (ADD, ADD, MUL), "*": (MUL, MUL, UNARY), "/": (MUL, MUL, UNARY),
    "%": (MUL, MUL, UNARY),
}
_COMPARISONS = frozenset({"=", "!=", "<", "<=", ">", ">="})


def unparse_expr(node: Node) -> str:
    """Canonical BQL text of an expression, a JSON path holder, or a row pattern term."""
    return _u(node)


def _u(node) -> str:
    fn = EXPR_RULES.get(type(node).__name__)
    if fn is None:
        raise TypeError(f"cannot unparse '{type(node).__name__}'")
    return fn(node)


# ---------------------------------------------------------------------------- expressions


def _prec(e) -> int:
    if isinstance(e, BinaryOp):
        return CMP if e.op in _COMPARISONS else _BINARY[e.op][0]
    if isinstance(e, UnaryOp):
        return NOT if e.op == "not" else UNARY
    if isinstance(e, Literal) and type(e.value) in (int, float) and _negative(e.value):
        return UNARY
    return _PRECEDENCE.get(type(e).__name__, PRIMARY)


def _negative(v) -> bool:
    return v < 0 or (isinstance(v, float) and math.copysign(1.0, v) < 0)


def expr(e, min_prec: int = OR) -> str:
    """Text of ``e``, parenthesised when it binds looser than ``min_prec``."""
    text = _u(e)
    return f"({text})" if _prec(e) < min_prec else text


def _BinaryOp(e) -> str:
    if e.op in _COMPARISONS:
        return f"{expr(e.left, CONCAT)} {e.op} {expr(e.right, CONCAT)}"
    _, left, right = _BINARY[e.op]
    op = e.op.upper() if e.op.isalpha() else e.op
    return f"{expr(e.left, left)} {op} {expr(e.right, right)}"


def _UnaryOp(e) -> str:
    if e.op == "not":
        return f"NOT {expr(e.operand, NOT)}"
    inner = expr(e.operand, UNARY)
    if e.op == "+":
        return f"+ {inner}" if inner.startswith(("+", "-")) else f"+{inner}"
    return f"- {inner}" if inner.startswith("-") else f"-{inner}"


def _Literal(e) -> str:
    v = e.value
    if v is None:
        return "NULL"
    if v is True:
        return "TRUE"
    if v is False:
        return "FALSE"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        return quote(v)
    raise TypeError(f"cannot unparse literal value of type '{type(v).__name__}'")


def _float(v: float) -> str:
    if not math.isfinite(v):
        return f'CAST("{v!r}" AS float)'
    text = repr(v)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    if "." not in text:
        text += ".0"
    return text


def quote(s: str) -> str:
    """A BQL string constant: double quotes, ``"`` doubled."""
    return '"' + s.replace('"', '""') + '"'


def _IsNull(e) -> str:
    return f"{expr(e.operand, IS)} IS {'NOT ' if e.negated else ''}NULL"


def _IsMissing(e) -> str:
    return f"{expr(e.operand, IS)} IS {'NOT ' if e.negated else ''}MISSING"


def _not(e) -> str:
    return "NOT " if e.negated else ""


def _InList(e) -> str:
    items = ", ".join(expr(i) for i in e.items)
    return f"{expr(e.operand, CONCAT)} {_not(e)}IN ({items})"


def _Between(e) -> str:
    return (f"{expr(e.operand, CONCAT)} {_not(e)}BETWEEN {expr(e.low, CONCAT)} "
            f"AND {expr(e.high, CONCAT)}")


def _Like(e) -> str:
    out = f"{expr(e.operand, CONCAT)} {_not(e)}LIKE {expr(e.pattern, CONCAT)}"
    return out if e.escape is None else f"{out} ESCAPE {expr(e.escape, CONCAT)}"


def _Cast(e) -> str:
    return f"{expr(e.operand, CAST)}::{e.type_name}"


def _FieldRef(e) -> str:
    prefix = f"{e.stream}:" if e.stream is not None else ""
    return prefix + path_text(e.path)


def path_text(steps, first: bool = True) -> str:
    """JSON Path text of a tuple of steps (the first step is written as a name when possible)."""
    out = []
    for i, s in enumerate(steps):
        if isinstance(s, KeyStep):
            plain = _IDENT.match(s.key) and not s.bracket
            if i == 0 and first:
                plain = plain and s.key.lower() not in _EXPR_WORDS
                out.append(s.key if plain else f"[{quote(s.key)}]")
            else:
                out.append(f".{s.key}" if plain else f"[{quote(s.key)}]")
        elif isinstance(s, IndexStep):
            out.append(f"[{s.index}]")
        elif isinstance(s, SliceStep):
            parts = ["" if p is None else str(p) for p in (s.start, s.end)]
            if s.step is not None:
                parts.append(str(s.step))
            out.append("[" + ":".join(parts) + "]")
        elif isinstance(s, RecursiveStep):
            out.append(f"..{s.key}" if _IDENT.match(s.key) else f"..[{quote(s.key)}]")
        else:
            raise TypeError(f"cannot unparse path step '{type(s).__name__}'")
    return "".join(out)


def _Wildcard(e) -> str:
    return f"{e.stream}:*" if e.stream is not None else "*"


def _TimestampRef(e) -> str:
    return f"{e.stream}:ts()" if e.stream is not None else "ts()"


def _SortKey(k) -> str:
    return expr(k.expr) + (" DESC" if k.descending else "")


def _FunctionCall(e) -> str:
    args = ", ".join(expr(a) for a in e.args)
    if e.order_by:
        args += " ORDER BY " + ", ".join(_SortKey(k) for k in e.order_by)
    if e.distinct:
        args = "DISTINCT " + args
    return f"{e.name}({args})"


def _CallSelector(e) -> str:
    return expr(e.call) + path_text(e.path, first=False)


def _ArrayLit(e) -> str:
    items = ", ".join(expr(i) for i in e.items)
    if len(e.items) == 1 and isinstance(e.items[0], Literal) and isinstance(e.items[0].value, str):
        items += ","  # ["foo"] would be a field selector
    return f"[{items}]"


def _MapLit(e) -> str:
    return "{" + ", ".join(f"{quote(k)}: {expr(v)}" for k, v in e.items) + "}"


def _Case(e) -> str:
    out = ["CASE"]
    if e.operand is not None:
        out.append(expr(e.operand))
    out += [f"WHEN {expr(w.condition)} THEN {expr(w.result)}" for w in e.whens]
    if e.else_ is not None:
        out.append(f"ELSE {expr(e.else_)}")
    out.append("END")
    return " ".join(out)


def _WhenClause(w) -> str:
    return f"WHEN {expr(w.condition)} THEN {expr(w.result)}"


def _PatternFieldRef(e) -> str:
    path = path_text(e.path, first=e.var is None)
    return path if e.var is None else f"{e.var}{path}"


def _Navigation(e) -> str:
    offset = f", {e.offset}" if e.offset is not None else ""
    return f"{e.kind.upper()}({expr(e.operand)}{offset})"


def _RunningFinal(e) -> str:
    return f"{e.semantics.upper()} {expr(e.operand, PRIMARY)}"


def _Classifier(e) -> str:
    return f"CLASSIFIER({e.var or ''})"


def _MatchTime(e) -> str:
    return "MATCH_ROWTIME()" if e.kind == "row" else "MATCH_PROCTIME()"


def _MatchNumber(e) -> str:
    return "MATCH_NUMBER()"


_PRECEDENCE = {"IsNull": IS, "IsMissing": IS, "Cast": CAST, "InList": CMP, "Between": CMP, "Like": CMP}


# ---------------------------------------------------------------------------- patterns

_P_ALT, _P_CONCAT, _P_QUANT = 1, 2, 3


def _pprec(t) -> int:
    if isinstance(t, PatternAlt):
        return _P_ALT
    if isinstance(t, PatternConcat):
        return _P_CONCAT
    if isinstance(t, PatternQuantified):
        return _P_QUANT
    return 4


def pattern(t, min_prec: int = _P_ALT) -> str:
    text = _u(t)
    return f"({text})" if _pprec(t) < min_prec else text


def _PatternVar(t) -> str:
    return t.name


def _PatternEmpty(t) -> str:
    return "()"


def _PatternAnchor(t) -> str:
    return "^" if t.kind == "start" else "$"


def _PatternConcat(t) -> str:
    return " ".join(pattern(i, _P_CONCAT + 1) for i in t.items)


def _PatternAlt(t) -> str:
    return " | ".join(pattern(i, _P_ALT + 1) for i in t.items)


def _PatternPermute(t) -> str:
    return "PERMUTE(" + ", ".join(pattern(i) for i in t.items) + ")"


def _PatternExclusion(t) -> str:
    return "{- " + pattern(t.term) + " -}"


def _PatternQuantified(t) -> str:
    low, high = t.min_count, t.max_count
    if (low, high) == (0, None):
        q = "*"
    elif (low, high) == (1, None):
        q = "+"
    elif (low, high) == (0, 1):
        q = "?"
    elif high is None:
        q = f"{{{low},}}"
    elif low == high:
        q = f"{{{low}}}"
    elif low == 0:
        q = f"{{,{high}}}"
    else:
        q = f"{{{low},{high}}}"
    return pattern(t.term, 4) + q + ("?" if t.reluctant else "")


EXPR_RULES = {name[1:]: fn for name, fn in list(globals().items())
              if name.startswith("_") and name[1:2].isupper() and callable(fn)}
