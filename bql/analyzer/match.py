"""MATCH_RECOGNIZE static rules (SQL:2016 as Trino/Oracle enforce them; seeds 000-002).

Run after ``prepare`` (``A.price`` already rewritten to ``PatternFieldRef``). Checked per clause:
the first ORDER BY key ascending (the time attribute; later keys may be DESC); SETTINGS; quantifier bounds; SUBSET and DEFINE name known variables; AFTER MATCH SKIP
names a known variable and cannot skip back to the first row of every match; CLASSIFIER and
variable-qualified columns name known variables; navigation (PREV/NEXT/FIRST/LAST) reads a column,
holds no aggregate, and nests only as PREV/NEXT around FIRST/LAST; an aggregate or navigation
argument uses one variable; FINAL, MATCH_NUMBER, MATCH_ROWTIME and MATCH_PROCTIME stay out of
DEFINE; ``A.*`` names a variable and is the argument of count; ``{- -}`` excludes rows so
it conflicts with ALL ROWS PER MATCH WITH UNMATCHED ROWS. Possibly unbounded state is a warning.
"""
from __future__ import annotations

import re

from ..ast import (
    Classifier,
    Expr,
    FieldRef,
    FunctionCall,
    KeyStep,
    Literal,
    MatchNumber,
    MatchRecognize,
    MatchTime,
    Navigation,
    Node,
    PatternFieldRef,
    PatternVar,
    RunningFinal,
    Statement,
    Wildcard,
)
from .aggregates import check_nested
from .context import Context, fail, match_items, selects_of, walk
from .match_pattern import first_always, has_exclusion, max_rows, quantified_terms
from .rewrite import pattern_variables

_VARLIKE = re.compile(r"^[A-Z][A-Z0-9_]*$")


def check_match_recognize(stmt: Statement, ctx: Context) -> None:
    allowed: set[int] = set()
    for select in selects_of(stmt):
        for mr in match_items(select):
            _check_one(mr, ctx)
            for clause in (*mr.measures, *mr.defines):
                allowed.update(id(n) for n in walk(clause) if isinstance(n, FunctionCall) and n.distinct)
    _check_distinct_calls(stmt, allowed, ctx)


def _check_distinct_calls(stmt: Statement, allowed: set[int], ctx: Context) -> None:
    """``agg(DISTINCT x)`` (YQL's ``COUNT(DISTINCT B1.zone_id)``, seed 000): an aggregate of one argument
    over the distinct values of ``x`` among the rows it aggregates, in MATCH_RECOGNIZE's MEASURES and
    DEFINE only (the other kernels do not run it)."""
    for n in walk(stmt):
        if not isinstance(n, FunctionCall) or not n.distinct:
            continue
        if id(n) not in allowed:
            raise fail(f"{n.name}(DISTINCT ...) can only be used in MATCH_RECOGNIZE's MEASURES and DEFINE "
                       "(yet)", n)
        if not ctx.is_aggregate(n):
            raise fail(f"DISTINCT can only be used in an aggregate call; '{n.name}' is not an aggregate", n)
        if isinstance(n.args[0], Wildcard):
            raise fail(f"{n.name}(DISTINCT *) is not supported; name the field: {n.name}(DISTINCT A.x)", n)


def _check_one(mr: MatchRecognize, ctx: Context) -> None:
    primary = pattern_variables(mr)
    variables = _check_subsets(mr, primary)
    if mr.order_by and mr.order_by[0].descending:
        raise fail("the first MATCH_RECOGNIZE ORDER BY key is the time attribute and must be ascending "
                   "(DESC is allowed on the later keys)", mr.order_by[0])
    _check_settings(mr)
    _check_quantifiers(mr)
    _check_defines(mr, primary)
    _check_skip(mr, variables)
    if mr.empty_matches == "with_unmatched" and has_exclusion(mr.pattern):
        raise fail("pattern exclusion {- -} cannot be used with ALL ROWS PER MATCH WITH UNMATCHED ROWS", mr.pattern)
    for expr in (*mr.partition_by, *(k.expr for k in mr.order_by)):
        _check_plain(expr, ctx)
    seen: set[str] = set()
    for m in mr.measures:
        if m.alias.lower() in seen:
            raise fail(f"measure '{m.alias}' is defined more than once", m)
        seen.add(m.alias.lower())
        _check_expr(m.expr, variables, ctx, in_define=False)
    for d in mr.defines:
        _check_expr(d.condition, variables, ctx, in_define=True)
    check_nested([m.expr for m in mr.measures] + [d.condition for d in mr.defines], ctx)
    _warn_unbounded(mr, ctx)


def _check_settings(mr: MatchRecognize) -> None:
    """SETTINGS names and values (the reorder buffer's, ``runtime/match/time_order.py``)."""
    from ..runtime.match.time_order import TimeOrder

    TimeOrder.from_settings(mr.settings)


def _check_subsets(mr: MatchRecognize, primary: set[str]) -> set[str]:
    names = set(primary)
    for s in mr.subsets:
        name = s.name.upper()
        if name in names:
            raise fail(f"subset '{name}' is already defined as a pattern or subset variable", s)
        for v in s.variables:
            if v.upper() not in primary:
                raise fail(f"subset '{name}' names variable '{v.upper()}', which is not in the pattern", s)
        names.add(name)
    return names


def _check_quantifiers(mr: MatchRecognize) -> None:
    for q in quantified_terms(mr.pattern):
        if q.min_count < 0 or (q.max_count is not None and q.max_count < 0):
            raise fail("a pattern quantifier bound must not be negative", q)
        if q.max_count is not None and q.min_count > q.max_count:
            raise fail(
                f"pattern quantifier {{{q.min_count},{q.max_count}}}: the minimum is larger than the maximum", q
            )


def _check_defines(mr: MatchRecognize, primary: set[str]) -> None:
    seen: set[str] = set()
    for d in mr.defines:
        name = d.name.upper()
        if name not in primary:
            raise fail(f"variable '{name}' in DEFINE is not in the pattern", d)
        if name in seen:
            raise fail(f"variable '{name}' is defined more than once in DEFINE", d)
        seen.add(name)


def _check_skip(mr: MatchRecognize, variables: set[str]) -> None:
    skip = mr.after_match
    if skip.mode not in ("to_first", "to_last", "to"):
        return
    var = (skip.var or "").upper()
    if var not in variables:
        raise fail(f"variable '{var}' in AFTER MATCH SKIP is not defined in PATTERN or SUBSET", skip)
    members = {var}
    for s in mr.subsets:
        if s.name.upper() == var:
            members = {v.upper() for v in s.variables}
    first = first_always(mr.pattern)
    looping = members & first
    if skip.mode != "to_first":
        # skipping to the last row of the variable loops only if that is always the first row
        looping = {v for v in looping if members == {v} and max_rows(mr.pattern, v) <= 1}
    if looping:
        where = "FIRST " if skip.mode == "to_first" else ("LAST " if skip.mode == "to_last" else "")
        raise fail(
            f"AFTER MATCH SKIP TO {where}{var} would restart every match at its own first row"
            f" ('{sorted(looping)[0]}' always maps it), which loops forever",
            skip,
        )


def _check_plain(expr: Expr, ctx: Context) -> None:
    """PARTITION BY / ORDER BY keys are plain row expressions."""
    for n in walk(expr):
        if isinstance(n, FunctionCall) and ctx.is_aggregate(n):
            raise fail(f"aggregate function '{n.name}' cannot be used in PARTITION BY or ORDER BY", n)
        if isinstance(n, (Navigation, Classifier, MatchNumber, MatchTime, RunningFinal, PatternFieldRef)):
            raise fail("pattern functions and variables cannot be used in PARTITION BY or ORDER BY", n)


def _explicit_vars(expr: Node) -> set[str]:
    out: set[str] = set()
    for n in walk(expr):
        if isinstance(n, PatternFieldRef) and n.var is not None:
            out.add(n.var.upper())
        elif isinstance(n, Classifier) and n.var is not None:
            out.add(n.var.upper())
    return out


def _has_column(expr: Node) -> bool:
    return any(isinstance(n, (FieldRef, PatternFieldRef, Classifier)) for n in walk(expr))


def _check_expr(expr: Expr, variables: set[str], ctx: Context, in_define: bool) -> None:
    counted = {id(a) for n in walk(expr) if isinstance(n, FunctionCall) and n.name.lower() == "count"
               for a in n.args if isinstance(a, Wildcard)}
    for n in walk(expr):
        if isinstance(n, Wildcard) and n.stream is not None:
            if n.stream.upper() not in variables:
                raise fail(f"'{n.stream.upper()}.*': '{n.stream.upper()}' is not a pattern variable of PATTERN or SUBSET", n)
            if id(n) not in counted:
                raise fail(f"'{n.stream.upper()}.*' can only be the argument of count", n)
        elif isinstance(n, MatchTime):
            if in_define:
                name = "MATCH_ROWTIME" if n.kind == "row" else "MATCH_PROCTIME"
                raise fail(f"{name}() can only be used in MEASURES, not in DEFINE", n)
        elif isinstance(n, FieldRef):
            first = n.path[0] if n.path else None
            if (
                n.stream is None
                and len(n.path) >= 2
                and isinstance(first, KeyStep)
                and not first.bracket
                and _VARLIKE.match(first.key)
            ):
                raise fail(f"pattern variable '{first.key}' is not defined in PATTERN or SUBSET", n)
        elif isinstance(n, PatternFieldRef):
            if n.var is not None and n.var.upper() not in variables:
                raise fail(f"pattern variable '{n.var}' is not defined in PATTERN or SUBSET", n)
        elif isinstance(n, Classifier):
            if n.var is not None and n.var.upper() not in variables:
                raise fail(f"CLASSIFIER({n.var}): variable '{n.var}' is not defined in PATTERN or SUBSET", n)
        elif isinstance(n, MatchNumber):
            if in_define:
                raise fail("MATCH_NUMBER() cannot be used in DEFINE", n)
        elif isinstance(n, RunningFinal):
            if in_define and n.semantics.lower() == "final":
                raise fail("FINAL cannot be used in DEFINE", n)
            op = n.operand
            if not (isinstance(op, Navigation) or (isinstance(op, FunctionCall) and ctx.is_aggregate(op))):
                raise fail(f"{n.semantics.upper()} can only be applied to a navigation or aggregate function", n)
        elif isinstance(n, Navigation):
            _check_navigation(n, ctx)
        elif isinstance(n, FunctionCall) and ctx.is_aggregate(n):
            used = set().union(*(_explicit_vars(a) for a in n.args)) if n.args else set()
            if len(used) > 1:
                names = ", ".join(f"'{v}'" for v in sorted(used))
                raise fail(f"the arguments of aggregate '{n.name}' must use one pattern variable, not {names}", n)


def _check_navigation(nav: Navigation, ctx: Context) -> None:
    kind = nav.kind.upper()
    if nav.offset is not None and nav.offset < 0:
        raise fail(f"the offset of {kind} must not be negative", nav)
    if not _has_column(nav.operand):
        raise fail(f"{kind} needs a column reference in its argument", nav)
    used = _explicit_vars(nav.operand)
    if len(used) > 1:
        names = ", ".join(f"'{v}'" for v in sorted(used))
        raise fail(f"the argument of {kind} must use one pattern variable, not {names}", nav)
    for inner in walk(nav.operand):
        if isinstance(inner, FunctionCall) and ctx.is_aggregate(inner):
            raise fail(f"aggregate function '{inner.name}' cannot be used inside {kind}", inner)
        if isinstance(inner, Navigation):
            ik = inner.kind.upper()
            if not (kind in ("PREV", "NEXT") and ik in ("FIRST", "LAST")):
                raise fail(f"{ik} cannot be nested inside {kind} (only FIRST/LAST inside PREV/NEXT)", inner)
        if isinstance(inner, MatchNumber):
            raise fail(f"MATCH_NUMBER() cannot be used inside {kind}", inner)


def _always_true(var: str, mr: MatchRecognize) -> bool:
    for d in mr.defines:
        if d.name.upper() == var:
            c = d.condition
            return isinstance(c, Literal) and c.value is True
    return True


def _warn_unbounded(mr: MatchRecognize, ctx: Context) -> None:
    if mr.within is not None:
        return
    for q in quantified_terms(mr.pattern):
        if q.max_count is not None or q.reluctant:
            continue
        names = {n.name.upper() for n in q.term.walk() if isinstance(n, PatternVar)}
        if names and all(_always_true(v, mr) for v in names):
            var = sorted(names)[0]
            ctx.warn(
                f"pattern variable '{var}' matches every row and its quantifier is unbounded:"
                " a match can keep state forever (add WITHIN or bound the quantifier)",
                q,
            )
            return
