"""GROUP BY, aggregates and HAVING over the kernel's current relation.

A query is *grouping* when it has a GROUP BY list or calls an aggregate function (in the select list or
HAVING). Rows are put in groups by their GROUP BY values compared with BQL equality (``multiset_key``:
2 and 2.0 fall in one group, NULL in one group), groups in order of first appearance. A query with
aggregates and no GROUP BY forms exactly one group, also over zero rows (``count`` is 0, the other
aggregates NULL). For every group the aggregates are computed over the group's rows, HAVING filters the
group, and the select list is evaluated with the group's first row and the aggregate values.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..ast import Expr, FunctionCall, Select
from ..eval import Env, Scope, compile_aggregate, compile_expr, is_aggregate_call
from ..values import multiset_key
from .projection import SelectList


def find_aggregates(exprs: Sequence[Any], registry: Any) -> list[FunctionCall]:
    """Distinct aggregate calls in ``exprs`` (outermost only), in order of appearance."""
    found: list[FunctionCall] = []

    def visit(node: Any) -> None:
        if isinstance(node, FunctionCall) and is_aggregate_call(node, registry):
            if node not in found:
                found.append(node)
            return
        for child in node.children():
            visit(child)

    for e in exprs:
        if e is not None:
            visit(e)
    return found


def is_grouping(select: Select, registry: Any) -> bool:
    """Whether the SELECT needs the grouping path (GROUP BY or any aggregate call)."""
    if select.group_by:
        return True
    exprs = [p.expr for p in select.projections] + [select.having]
    return bool(find_aggregates(exprs, registry))


class Grouping:
    """The relation-to-relation part of a grouping query.

    ``row_key(env)`` computes a row's group values (the kernel caches it per row); ``evaluate(rows)``
    turns ``[(env, key), ...]`` into the output rows.
    """

    def __init__(self, select: Select, aliases: Sequence[str], registry: Any = None):
        self.aliases = tuple(aliases)
        row_scope = Scope(self.aliases, registry=registry)
        self.key_fns: list[Callable[[Env], Any]] = [compile_expr(e, row_scope) for e in select.group_by]
        calls = find_aggregates([p.expr for p in select.projections] + [select.having], registry)
        self.aggregates = [compile_aggregate(c, row_scope) for c in calls]
        slots = {c: i for i, c in enumerate(calls)}
        group_scope = Scope(self.aliases, registry=registry, aggregate_slot=slots.get)
        self.having = compile_expr(select.having, group_scope) if select.having is not None else None
        self.select_list = SelectList(select.projections, self.aliases,
                                      lambda e: compile_expr(e, group_scope))
        self.global_group = not select.group_by

    def row_key(self, env: Env) -> Any:
        """The hashable group key of one row (BQL equality of the GROUP BY values)."""
        return tuple(multiset_key(fn(env)) for fn in self.key_fns)

    def evaluate(self, rows: Sequence[tuple[Env, Any]], now: Any = None) -> list[dict[str, Any]]:
        groups: dict[Any, list[Env]] = {}
        for env, key in rows:
            groups.setdefault(key, []).append(env)
        if self.global_group and not groups:
            groups[()] = []
        out: list[dict[str, Any]] = []
        for envs in groups.values():
            values = [agg.evaluate(envs) for agg in self.aggregates]
            row = self.group_output(values, envs[0].tuples if envs else {}, now)
            if row is not None:
                out.append(row)
        return out

    def group_output(self, values: list[Any], first: dict[str, Any], now: Any = None) -> dict[str, Any] | None:
        """A group's output row from its aggregate ``values`` and its first row's ``tuples`` (None:
        HAVING rejects it)."""
        genv = Env(first, values, now)
        if self.having is not None and self.having(genv) is not True:
            return None
        return self.select_list.evaluate(genv)


def compile_where(where: Expr | None, aliases: Sequence[str], registry: Any = None):
    """The compiled WHERE clause, or None."""
    if where is None:
        return None
    return compile_expr(where, Scope(tuple(aliases), registry=registry))
