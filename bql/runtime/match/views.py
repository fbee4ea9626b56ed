"""The match as expressions see it: ``View`` (one match or candidate from one row), ``Bound`` (a view
pinned to one row, inside navigation and aggregate arguments) and the lazily computed aggregates.

A ``View`` covers the rows ``start .. hi`` (inclusive, absolute partition positions) of a match whose
labels are ``labels`` (``labels[i]`` is the variable of row ``start + i``). RUNNING semantics use
``hi = cur`` and FINAL ``hi = last``. The ``Env`` of a MATCH_RECOGNIZE expression carries its view under
the alias ``MR``; ``exprs.MRContext`` compiles the expressions that read it. A row outside the
partition reads as NULL; a row that has not arrived yet raises ``Blocked``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ...eval import Env
from ...values import multiset_key

if TYPE_CHECKING:
    from .exprs import MRContext

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


NO_ROW, NOT_YET_ROW = _NoRow(), _BlockedRow()


class Blocked(Exception):
    """A value needs a row that has not arrived yet (NEXT beyond the available rows)."""


class View:
    """One match (or candidate) seen from row ``cur``; ``part`` gives rows by absolute position."""

    __slots__ = ("part", "start", "labels", "cur", "last", "hi", "mno", "sets", "_aggs", "ctx")

    def __init__(self, part: Any, start: int, labels: list, cur: int, last: int, mno: Any,
                 ctx: MRContext, final: bool = False):
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
            envs = distinct_rows(envs, distinct)
        value = self.cache[slot] = agg.evaluate(envs)
        return value


def distinct_rows(envs: list[Env], key: Callable[[Env], Any]) -> list[Env]:
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
