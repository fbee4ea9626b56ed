"""MATCH_RECOGNIZE expressions: pattern field references, navigation, CLASSIFIER, MATCH_NUMBER,
MATCH_ROWTIME / MATCH_PROCTIME, RUNNING/FINAL and aggregates over pattern variables (``count(A.*)``
counts the rows mapped to ``A``).

Ordinary sub-expressions are compiled by the evaluator (``compile_expr``); the MATCH_RECOGNIZE-only
nodes are plugged in through ``Scope.extensions``. At run time the ``Env`` carries a ``View`` (the
match as seen from one row) under the alias ``MR``; aggregates are computed lazily through
``Env.aggregates``.

A ``View`` covers the rows ``start .. hi`` (inclusive, absolute partition positions) of a match whose
labels are ``labels`` (``labels[i]`` is the variable of row ``start + i``). RUNNING semantics use
``hi = cur`` and FINAL ``hi = last``. A ``Bound`` view pins every field reference to one row (inside
navigation and aggregate arguments).
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
from ...values import MISSING, multiset_key
from .levels import referenced_vars
from .match_time import MatchTime, ProcessingClock, rowtime

MR = "\x00mr"
ROW = "\x00row"
POS = "\x00pos"


class _NoRow:
    """A row outside the partition: every field reads as NULL."""

    __slots__ = ()
    data: dict = {}


class _BlockedRow:
    """A row that has not arrived yet: reading a field of it raises ``Blocked``."""

    __slots__ = ()

    @property
    def data(self) -> dict:
        raise Blocked(-1)


_NO_ROW, _BLOCKED = _NoRow(), _BlockedRow()


class Blocked(Exception):
    """A value needs a row that has not arrived yet (NEXT beyond the available rows)."""


class View:
    """One match (or candidate) seen from row ``cur``; ``part`` gives rows by absolute position."""

    __slots__ = ("part", "start", "labels", "cur", "last", "hi", "mno", "sets", "_aggs", "ctx")

    def __init__(self, part: Any, start: int, labels: list, cur: int, last: int, mno: Any,
                 ctx: "MRContext", final: bool = False):
        self.part = part
        self.start = start
        self.labels = labels
        self.cur = cur
        self.last = last
        self.hi = last if final else cur
        self.mno = mno
        self.ctx = ctx
        self.sets = ctx.sets
        self._aggs = None

    def with_final(self, final: bool) -> "View":
        hi = self.last if final else self.cur
        if hi == self.hi:
            return self
        return View(self.part, self.start, self.labels, self.cur, self.last, self.mno, self.ctx, final)

    # rows of the (running or final) match
    def label_at(self, idx: int) -> Any:
        if self.start <= idx <= self.hi:
            return self.labels[idx - self.start]
        return None

    def rows_of(self, var: str | None) -> list[int]:
        start = self.start
        if var is None:
            return list(range(start, self.hi + 1))
        members = self.sets[var]
        labels = self.labels
        return [start + i for i in range(self.hi - start + 1) if labels[i] in members]

    def nth(self, var: str | None, n: int, from_first: bool) -> int | None:
        start, hi = self.start, self.hi
        if hi < start or n < 0:
            return None
        if var is None:
            idx = start + n if from_first else hi - n
            return idx if start <= idx <= hi else None
        members = self.sets[var]
        labels = self.labels
        rng = range(0, hi - start + 1) if from_first else range(hi - start, -1, -1)
        for i in rng:
            if labels[i] in members:
                if n == 0:
                    return start + i
                n -= 1
        return None

    def ref_row(self, var: str | None) -> int | None:
        return self.nth(var, 0, False)

    def classifier(self, var: str | None) -> Any:
        idx = self.nth(var, 0, False)
        return None if idx is None else self.labels[idx - self.start]

    def env(self) -> Env:
        if self._aggs is None:
            self._aggs = _Aggregates(self)
        return Env({MR: self}, self._aggs)


class Bound:
    """``view`` with every field reference and CLASSIFIER() pinned to row ``idx``."""

    __slots__ = ("view", "idx")

    def __init__(self, view: View, idx: int):
        self.view = view
        self.idx = idx

    def ref_row(self, var: str | None) -> int:
        return self.idx

    def classifier(self, var: str | None) -> Any:
        return self.view.label_at(self.idx)

    @property
    def mno(self) -> Any:
        return self.view.mno

    def env(self) -> Env:
        return Env({MR: self}, self.view.env().aggregates)


class _Aggregates:
    """``Env.aggregates`` of a view: slot → value, computed on first use."""

    __slots__ = ("view", "cache")

    def __init__(self, view: View):
        self.view = view
        self.cache: dict[int, Any] = {}

    def __getitem__(self, slot: int) -> Any:
        try:
            return self.cache[slot]
        except KeyError:
            pass
        view = self.view
        agg, var = view.ctx.aggregates[slot]
        envs = [Env({MR: Bound(view, idx)}) for idx in view.rows_of(var)]
        distinct = view.ctx.distinct.get(slot)
        if distinct is not None:
            envs = _distinct(envs, distinct)
        value = self.cache[slot] = agg.evaluate(envs)
        return value


def _distinct(envs: list[Env], key: Callable[[Env], Any]) -> list[Env]:
    """The rows of ``count(DISTINCT x)`` and the like: the first row of each value of ``x`` (values equal
    as GROUP BY compares them: 2 equals 2.0)."""
    seen: set = set()
    out = []
    for env in envs:
        k = multiset_key(key(env))
        if k not in seen:
            seen.add(k)
            out.append(env)
    return out


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
                    tup = _BLOCKED  # a row still to come: Blocked once a field of it is read
                return inner(Env({ROW: _NO_ROW if tup is None else tup, POS: (rows, idx)}))
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
