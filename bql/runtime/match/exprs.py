"""MATCH_RECOGNIZE expressions: pattern field references, navigation, CLASSIFIER, MATCH_NUMBER,
MATCH_ROWTIME / MATCH_PROCTIME, RUNNING/FINAL and aggregates over pattern variables (``count(A.*)``
counts the rows mapped to ``A``).

Ordinary sub-expressions are compiled by the evaluator (``compile_expr``); the MATCH_RECOGNIZE-only
nodes are plugged in through ``Scope.extensions``. At run time the ``Env`` carries a ``View`` (the
match as seen from one row) under the alias ``MR``; aggregates are computed lazily through
``Env.aggregates``.

The views themselves (``View``, ``Bound``, the aggregates) are in ``views.py``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ...ast import (
    Classifier,
    FieldRef,
    FunctionCall,
    KeyStep,
    MatchNumber,
    Navigation,
    Node,
    PatternFieldRef,
    RunningFinal,
    TimestampRef,
    Wildcard,
)
from ...eval import Env, Scope, compile_aggregate, compile_expr
from ...eval.paths import compile_path
from ...values import MISSING
from .levels import referenced_vars
from .match_time import MatchTime, ProcessingClock, rowtime
from .views import MR, NO_ROW, NOT_YET_ROW, POS, ROW, Blocked, Bound, View


def _view(env: Env) -> Any:
    return env.tuples[MR]


def _row_value(part: Any, idx: int | None, getter: Callable) -> Any:
    if idx is None:
        return None
    tup = part.get(idx)
    if tup is None:
        return None
    v = getter(tup.data)
    return None if v is MISSING else v


def _single_var(expr: Any) -> str | None:
    vs = referenced_vars(expr) - {None}
    return next(iter(vs)) if len(vs) == 1 else None


class MRContext:
    """Compiles the expressions of one MATCH_RECOGNIZE clause (shared aggregate slots)."""

    def __init__(self, registry: Any, sets: dict[str, frozenset], input_alias: str):
        self.sets = sets
        self.input_alias = input_alias
        self.proc_clock = ProcessingClock()
        self.aggregates: list[tuple[Any, str | None]] = []
        self.distinct: dict[int, Callable[[Env], Any]] = {}  # slot -> argument of an aggregate(DISTINCT x)
        self._pending: list[FunctionCall] = []
        self.scope = Scope((MR,), registry, self._slot, True, {
            PatternFieldRef: self._c_ref,
            Classifier: self._c_classifier,
            MatchNumber: self._c_mno,
            RunningFinal: self._c_running_final,
            Navigation: self._c_navigation,
            MatchTime: self._c_match_time,
        })
        self.registry = self.scope.registry

    # ------------------------------------------------------------ public

    def normalise(self, expr: Any) -> Any:
        """Unqualified (or input-prefixed) field selectors and ``A.x`` → ``PatternFieldRef``."""
        sets, alias = self.sets, self.input_alias

        def fn(n: Node) -> Node:
            if isinstance(n, FieldRef) and (n.stream is None or n.stream == alias):
                p = n.path
                if (n.stream is None and len(p) >= 2 and isinstance(p[0], KeyStep) and not p[0].bracket
                        and p[0].key.upper() in sets):
                    return PatternFieldRef(var=p[0].key.upper(), path=p[1:], span=n.span)
                return PatternFieldRef(var=None, path=p, span=n.span)
            if isinstance(n, PatternFieldRef) and n.var is not None and n.var.upper() != n.var:
                return dataclasses.replace(n, var=n.var.upper())
            if isinstance(n, Classifier) and n.var is not None and n.var.upper() != n.var:
                return dataclasses.replace(n, var=n.var.upper())
            if isinstance(n, Wildcard) and n.stream is not None:  # A.* (count(A.*)); t.* of the input
                if n.stream.upper() in sets:
                    return n if n.stream == n.stream.upper() else dataclasses.replace(n, stream=n.stream.upper())
                if n.stream.lower() == alias.lower():
                    return dataclasses.replace(n, stream=None)
            return n

        from ...analyzer.rewrite import transform

        return transform(expr, fn)

    def compile(self, expr: Any) -> Callable[[View], Any]:
        """``f(view) -> value`` for a MEASURES / DEFINE expression."""
        fn = compile_expr(self.normalise(expr), self.scope)
        self._flush_aggregates()
        return lambda view: fn(view.env())

    def compile_row_local(self, expr: Any, var: str) -> Callable[[Any, int], Any] | None:
        """A fast ``f(rows, p) -> value`` for a DEFINE condition of ``var`` that reads only the row at
        position ``p`` and rows at physical offsets from it (``PREV``/``NEXT`` over ``var``'s or
        universal fields, not nested; no CLASSIFIER, MATCH_NUMBER, FIRST/LAST or aggregate); None
        otherwise. Its values equal those of ``compile`` on a view of that one row."""
        expr = self.normalise(expr)
        for n in expr.walk():
            if isinstance(n, (Classifier, MatchNumber, RunningFinal, TimestampRef)):
                return None
            if isinstance(n, Navigation) and (n.kind.lower() not in ("prev", "next") or any(
                    isinstance(m, Navigation) for m in n.operand.walk())):
                return None
            if isinstance(n, PatternFieldRef) and n.var not in (None, var):
                return None
            if isinstance(n, FunctionCall):
                spec = self.registry.get(n.name)
                if spec is None or spec.aggregate:
                    return None

        def row_ref(node: PatternFieldRef, scope: Scope, child: Callable) -> Callable:
            getter = compile_path(node.path)

            def ref(env: Env) -> Any:
                v = getter(env.tuples[ROW].data)
                return None if v is MISSING else v
            return ref

        def row_nav(node: Navigation, scope: Scope, child: Callable) -> Callable:
            n = 1 if node.offset is None else node.offset
            if node.kind.lower() == "prev":
                n = -n
            inner = child(node.operand)

            def nav(env: Env) -> Any:
                rows, p = env.tuples[POS]
                idx = p + n
                if idx < 0:
                    return None
                try:
                    tup = rows.get(idx)
                except Blocked:
                    tup = NOT_YET_ROW  # a row still to come: Blocked once a field of it is read
                return inner(Env({ROW: NO_ROW if tup is None else tup, POS: (rows, idx)}))
            return nav

        fn = compile_expr(expr, Scope((ROW,), self.registry, None, True,
                                      {PatternFieldRef: row_ref, Navigation: row_nav}))
        return lambda rows, p: fn(Env({ROW: rows.get(p), POS: (rows, p)}))

    # ------------------------------------------------------------ aggregates

    def _slot(self, call: FunctionCall) -> int:
        self._pending.append(call)
        return len(self.aggregates) + len(self._pending) - 1

    def _flush_aggregates(self) -> None:
        while self._pending:
            call = self._pending.pop(0)
            slot = len(self.aggregates)
            self.aggregates.append((None, None))
            var = _single_var(call)
            if any(type(a) is Wildcard and a.stream is not None for a in call.args):
                # count(A.*): count(*) over the rows mapped to A
                call = dataclasses.replace(call, args=tuple(
                    Wildcard(None, span=a.span) if type(a) is Wildcard else a for a in call.args))
            self.aggregates[slot] = (compile_aggregate(call, self.scope), var)
            if call.distinct:
                self.distinct[slot] = compile_expr(call.args[0], self.scope)

    # ------------------------------------------------------------ node compilers

    def _c_ref(self, node: PatternFieldRef, scope: Scope, child: Callable) -> Callable:
        getter = compile_path(node.path)
        var = node.var

        def ref(env: Env) -> Any:
            v = env.tuples[MR]
            view = v if type(v) is View else v.view
            return _row_value(view.part, v.ref_row(var), getter)

        return ref

    def _c_classifier(self, node: Classifier, scope: Scope, child: Callable) -> Callable:
        var = node.var
        return lambda env: _view(env).classifier(var)

    def _c_mno(self, node: MatchNumber, scope: Scope, child: Callable) -> Callable:
        return lambda env: _view(env).mno

    def _c_match_time(self, node: MatchTime, scope: Scope, child: Callable) -> Callable:
        if node.kind == "row":
            def row(env: Env) -> Any:
                v = env.tuples[MR]
                return rowtime(v if type(v) is View else v.view)
            return row
        clock = self.proc_clock
        return lambda env: clock.now()

    def _c_running_final(self, node: RunningFinal, scope: Scope, child: Callable) -> Callable:
        inner = child(node.operand)
        final = node.semantics == "final"

        def rf(env: Env) -> Any:
            v = _view(env)
            if type(v) is not View:
                return inner(env)
            return inner(v.with_final(final).env())

        return rf

    def _locator(self, node: Navigation, child: Callable) -> tuple[Callable, Any]:
        """(``locate(view) -> row or None``, innermost operand) of a navigation node."""
        kind = node.kind.lower()
        if kind in ("first", "last"):
            var = _single_var(node.operand)
            n = node.offset or 0
            first = kind == "first"
            return (lambda view: view.nth(var, n, first)), node.operand
        n = 1 if node.offset is None else node.offset
        if kind == "prev":
            n = -n
        inner = node.operand
        final = None
        if isinstance(inner, RunningFinal):
            final = inner.semantics == "final"
            inner = inner.operand
        if isinstance(inner, Navigation) and inner.kind.lower() in ("first", "last"):
            base, operand = self._locator(inner, child)
            sem = final

            def locate(view: View) -> int | None:
                if sem is not None:
                    view = view.with_final(sem)
                b = base(view)
                return None if b is None else b + n
            return locate, operand
        var = _single_var(node.operand)

        def locate_phys(view: View) -> int | None:
            b = view.ref_row(var)
            return None if b is None else b + n
        return locate_phys, node.operand

    def _c_navigation(self, node: Navigation, scope: Scope, child: Callable) -> Callable:
        locate, operand = self._locator(node, child)
        inner = child(operand)

        def nav(env: Env) -> Any:
            v = _view(env)
            view = v if type(v) is View else v.view
            idx = locate(view)
            if idx is None or idx < 0:
                return None
            return inner(Bound(view, idx).env())

        return nav
