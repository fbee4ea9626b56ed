"""How much of a match a MATCH_RECOGNIZE expression reads: the DEFINE dependency levels that decide
how far the matcher may merge threads (and whether the automaton applies), and the physical PREV/NEXT
reach that decides how many rows before an attempt must be kept.
"""
from __future__ import annotations

from typing import Any

from ...ast import (
    Classifier,
    FunctionCall,
    MatchNumber,
    Navigation,
    Node,
    PatternFieldRef,
    RunningFinal,
    TimestampRef,
    Wildcard,
)


def referenced_vars(expr: Any) -> set:
    """Variables named by field references and CLASSIFIER(var) in ``expr`` (None = universal)."""
    out: set = set()
    for n in expr.walk():
        if isinstance(n, PatternFieldRef):
            out.add(n.var)
        elif isinstance(n, Classifier) and n.var is not None:
            out.add(n.var)
        elif isinstance(n, Wildcard) and n.stream is not None:  # A.* (after MRContext.normalise)
            out.add(n.stream)
    return out



ROW_LOCAL, START_DEPENDENT, LABEL_DEPENDENT = 1, 2, 3


def define_level(expr: Any, var: str, registry: Any) -> int:
    """How much of the match a DEFINE condition of ``var`` reads: 1 = only the current row and rows
    at physical offsets from it, 2 = also the match start (universal FIRST/LAST, aggregates, match
    number), 3 = the labels of earlier rows."""
    own = {None, var}

    def lvl(e: Any) -> int:
        if isinstance(e, PatternFieldRef):
            return ROW_LOCAL if e.var in own else LABEL_DEPENDENT
        if isinstance(e, Classifier):
            return ROW_LOCAL if e.var is None else LABEL_DEPENDENT
        if isinstance(e, MatchNumber):
            return START_DEPENDENT
        if isinstance(e, TimestampRef):
            return ROW_LOCAL
        if isinstance(e, Navigation):
            kind = e.kind.lower()
            vs = referenced_vars(e.operand)
            has_cls = any(isinstance(n, Classifier) for n in e.operand.walk())
            if kind in ("first", "last"):
                if has_cls or not vs <= own:
                    return LABEL_DEPENDENT
                if kind == "last" and not e.offset:
                    return max(ROW_LOCAL, lvl(e.operand))
                return START_DEPENDENT if vs <= {None} else LABEL_DEPENDENT
            inner = e.operand.operand if isinstance(e.operand, RunningFinal) else e.operand
            if isinstance(inner, Navigation) and inner.kind.lower() in ("first", "last"):
                return max(START_DEPENDENT, lvl(inner))
            return LABEL_DEPENDENT if has_cls else lvl(e.operand)
        if isinstance(e, FunctionCall):
            spec = registry.get(e.name)
            if spec is not None and spec.aggregate:
                vs = referenced_vars(e)
                return START_DEPENDENT if vs <= {None} and not any(
                    isinstance(n, Classifier) for n in e.walk()) else LABEL_DEPENDENT
        if isinstance(e, Node):
            return max((lvl(c) for c in e.children()), default=ROW_LOCAL)
        return ROW_LOCAL

    return lvl(expr)


def max_offsets(exprs: list) -> tuple[int, int]:
    """(largest PREV reach back, largest NEXT reach forward) over ``exprs`` (nested offsets add up)."""
    back = fwd = 0

    def walk(e: Any, b: int, f: int) -> None:
        nonlocal back, fwd
        if isinstance(e, Navigation):
            k = e.kind.lower()
            n = 1 if e.offset is None else e.offset
            if k == "prev":
                b += n
            elif k == "next":
                f += n
        back, fwd = max(back, b), max(fwd, f)
        if isinstance(e, Node):
            for c in e.children():
                walk(c, b, f)

    for e in exprs:
        walk(e, 0, 0)
    return back, fwd
