"""DISTINCT, ORDER BY and top-N: the relation-to-relation steps after the select list (docs/sql-breadth.md).

A SELECT's step computes its output relation (a list of rows, in the kernel's relation order); before
the emitter (RSTREAM/ISTREAM/DSTREAM) compares it with the previous step, ``RelationShape.apply``

1. ``DISTINCT``: keeps the first row of every set of equal rows (equality as the emitters compare rows,
   ``values.multiset_key``: 2 equals 2.0, NULL equals NULL inside containers, a row holding NaN is
   never equal to another);
2. ``ORDER BY k1 [DESC], ...``: sorts the rows by keys evaluated on each output row — the order of
   ORDER BY inside aggregates (``values.sort_key``: NULL last ascending and first descending, numbers
   by value, other types by type name then value), stable, so equal keys keep the relation order;
3. with ORDER BY, ``LIMIT n``: keeps the first ``n`` rows (top-N of each step).

A key that cannot be evaluated (a missing column, a type error) fails the step like any other
evaluation error: the tuple is dropped and the emitter keeps its previous relation. The shape holds no
state of its own.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from ..ast import Select
from ..eval import Env, Scope, compile_expr
from ..values import multiset_key, sort_key
from .processor import Tuple

_ROW = "__output__"  # the alias under which ORDER BY keys read the output row
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class RelationShape:
    """The DISTINCT / ORDER BY / top-N steps of one SELECT (build it with ``of``)."""

    __slots__ = ("distinct", "keys", "top")

    def __init__(self, select: Select, registry: Any = None):
        self.distinct = select.distinct
        scope = Scope((_ROW,), registry=registry)
        self.keys = [(compile_expr(k.expr, scope), k.descending) for k in select.order_by]
        self.top = select.limit if select.order_by else None

    @classmethod
    def of(cls, select: Select, registry: Any = None) -> RelationShape | None:
        """The shape of ``select``, or None when it has neither DISTINCT nor ORDER BY."""
        if not select.distinct and not select.order_by:
            return None
        return cls(select, registry)

    def apply(self, rows: list[dict[str, Any]], now: _dt.datetime | None = None) -> list[dict[str, Any]]:
        """The shaped relation (a new list; the rows themselves are not copied)."""
        if self.distinct:
            rows = distinct_rows(rows)
        if self.keys:
            rows = self._sorted(rows, now)
        if self.top is not None:
            rows = rows[:self.top]
        return rows

    def _sorted(self, rows: list[dict[str, Any]], now: _dt.datetime | None) -> list[dict[str, Any]]:
        keyed = []
        for row in rows:
            env = Env({_ROW: Tuple(row, now or _EPOCH)}, None, now)
            keyed.append([f(env) for f, _ in self.keys])
        order = list(range(len(rows)))
        for k in range(len(self.keys) - 1, -1, -1):  # stable sorts, last key first
            order.sort(key=lambda i: sort_key(keyed[i][k]), reverse=self.keys[k][1])
        return [rows[i] for i in order]


def distinct_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first row of every set of equal rows, in their order."""
    seen: set = set()
    out = []
    for row in rows:
        key = multiset_key(row)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out
