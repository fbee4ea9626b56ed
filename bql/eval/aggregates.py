"""Aggregate calls over a group of rows: ``compile_aggregate(call, scope).evaluate(envs)``.

The aggregation-parameter arguments (``FunctionSpec.agg_params``) are evaluated once per row and
passed to the aggregate as lists, ordered by the call's ``ORDER BY`` (stable, in SensorBee's ``data.Less``
order, ``values.sensorbee_sort_key``: NULL is the smallest value, first ascending and last descending).
The other arguments (e.g. ``string_agg``'s separator) are evaluated once, on the group's first row;
for an empty group (no GROUP BY, no rows) one that reads no row is still evaluated, as SensorBee's
evalNoGroup evaluates the projection over empty aggregate inputs (so ``string_agg(x, NULL)`` fails
there too), and one that reads a row is NULL. ``count(*)`` receives one ``True`` per row; a ``*``
argument of another aggregate is each row's map (``array_agg(*)``: SensorBee's
groupby_execution_plan_test.go TestAggregateFunctions).
"""
from __future__ import annotations

from typing import Any, Sequence

from ..ast import FunctionCall, Wildcard
from ..errors import BQLAnalysisError, BQLError, BQLEvaluationError
from ..values import sensorbee_sort_key
from .analysis import reads_row
from .compiler import compile_expr
from .env import Env, Scope


def _row_true(env: Env) -> bool:
    return True


_NO_ROW = Env({})


class CompiledAggregate:
    """One compiled aggregate call; ``evaluate(envs)`` gives its value over those rows."""

    __slots__ = ("call", "spec", "_args", "_agg_positions", "_order", "_rowless")

    def __init__(self, call: FunctionCall, spec: Any, args: list, agg_positions: frozenset,
                 order: list):
        self.call = call
        self.spec = spec
        self._args = args  # compiled argument closures, by position
        self._agg_positions = agg_positions
        self._order = order  # [(closure, descending)]
        # the other arguments that read no row: evaluated even for an empty group
        self._rowless = frozenset(pos for pos, a in enumerate(call.args)
                                  if pos not in agg_positions and not reads_row(a))

    def evaluate(self, envs: Sequence[Env]) -> Any:
        rows = envs
        if self._order and len(envs) > 1:
            keyed = [[f(env) for f, _ in self._order] for env in envs]
            idx = list(range(len(envs)))
            for k in range(len(self._order) - 1, -1, -1):
                desc = self._order[k][1]
                idx.sort(key=lambda i: sensorbee_sort_key(keyed[i][k]), reverse=desc)
            rows = [envs[i] for i in idx]
        return self._apply(lambda pos: [self._args[pos](env) for env in rows], rows[0] if rows else None)

    # ------------------------------------------------------------ per-row columns (append-only groups)

    @property
    def ordered(self) -> bool:
        """The call has ``ORDER BY``: its rows are sorted before the function sees them."""
        return bool(self._order)

    def column_fns(self) -> list[tuple[int, Any]]:
        """``(position, closure)`` of each aggregation-parameter argument: a group's column at that
        position is the closure's value on each of its rows, in row order (None: ``count(*)``'s
        ``True`` per row)."""
        return [(pos, None if f is _row_true else f) for pos, f in enumerate(self._args)
                if pos in self._agg_positions]

    def apply_columns(self, column: Any, first: Env) -> Any:
        """``evaluate`` over a non-empty group given its columns: ``column(pos)`` returns the values at
        an aggregation position (or raises what evaluating them would first raise); the other
        arguments are evaluated on ``first``, the group's first row. No ``ORDER BY`` (``ordered``)."""
        return self._apply(column, first)

    def _apply(self, column: Any, first: Env | None) -> Any:
        args = []
        for pos, f in enumerate(self._args):
            if pos in self._agg_positions:
                args.append(column(pos))
            elif first is not None:
                args.append(f(first))
            else:
                args.append(f(_NO_ROW) if pos in self._rowless else None)
        try:
            return self.spec.impl(*args)
        except BQLError:
            raise
        except Exception as err:
            raise BQLEvaluationError(f"aggregate '{self.spec.name}' failed: {err}") from err


def compile_aggregate(call: FunctionCall, scope: Scope) -> CompiledAggregate:
    """Compile an aggregate call; its arguments may not contain aggregates themselves."""
    spec = scope.registry.get(call.name)
    if spec is None or not spec.aggregate:
        raise BQLAnalysisError(f"'{call.name}' is not an aggregate function", call.span)
    problem = spec.check_arity(len(call.args))
    if problem:
        raise BQLAnalysisError(problem, call.span)
    inner = Scope(scope.aliases, scope.registry, None, scope.stream, getattr(scope, "extensions", None))
    agg_positions = frozenset(p for p in spec.agg_params if p < len(call.args))
    args = []
    for pos, a in enumerate(call.args):
        if type(a) is Wildcard and a.stream is None and spec.star and pos in agg_positions:
            args.append(_row_true)
        else:
            args.append(compile_expr(a, inner))
    order = [(compile_expr(k.expr, inner), k.descending) for k in call.order_by]
    return CompiledAggregate(call, spec, args, agg_positions, order)
