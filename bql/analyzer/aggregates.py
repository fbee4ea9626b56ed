"""GROUP BY, HAVING and aggregate calls (SensorBee's grouping rules).

- GROUP BY lists plain field references only ("grouping by expressions is not supported yet").
- Aggregates may not appear in WHERE or GROUP BY, nor inside another aggregate.
- When a query groups, aggregates or has a HAVING clause, every field used in the select list or
  HAVING outside an aggregate must be grouped (the whole path: ``GROUP BY a`` does not group
  ``a.b``); ``*`` and ``ts()`` cannot be used there.
- Non-aggregation parameters of an aggregate (``sep`` in ``string_agg(name, sep)``) are evaluated
  once per group, so they must be grouped fields or constants.
"""
from __future__ import annotations

from collections.abc import Iterator

from ..ast import (
    Expr,
    FieldRef,
    FunctionCall,
    IndexStep,
    KeyStep,
    Node,
    RecursiveStep,
    Select,
    SliceStep,
    Statement,
    TimestampRef,
    Wildcard,
    WindowFunction,
)
from .context import Context, fail, select_exprs, selects_of, walk

WINDOW_COLUMNS = ("window_start", "window_end")


def aggregates_in(expr: Expr | None, ctx: Context) -> Iterator[FunctionCall]:
    """Outermost aggregate calls in ``expr`` (does not look inside an aggregate)."""
    if expr is None:
        return
    stop = lambda n: isinstance(n, FunctionCall) and ctx.is_aggregate(n)  # noqa: E731
    for n in walk(expr, stop):
        if stop(n):
            yield n  # type: ignore[misc]


def step_key(step) -> tuple:
    """A path step as a plain comparable value (ignores the written form and the span)."""
    if isinstance(step, KeyStep):
        return ("key", step.key)
    if isinstance(step, IndexStep):
        return ("index", step.index)
    if isinstance(step, SliceStep):
        return ("slice", step.start, step.end, step.step)
    if isinstance(step, RecursiveStep):
        return ("recursive", step.key)
    return ("?", repr(step))


def field_text(ref: FieldRef) -> str:
    """A field reference as written, for messages (``src:a.b[0]``)."""
    out = ""
    for i, step in enumerate(ref.path):
        if isinstance(step, KeyStep):
            if step.bracket:
                out += f'["{step.key}"]'
            else:
                out += ("." if i else "") + step.key
        elif isinstance(step, IndexStep):
            out += f"[{step.index}]"
        elif isinstance(step, SliceStep):
            parts = ["" if v is None else str(v) for v in (step.start, step.end)]
            if step.step is not None:
                parts.append(str(step.step))
            out += "[" + ":".join(parts) + "]"
        elif isinstance(step, RecursiveStep):
            out += ".." + step.key
    return f"{ref.stream}:{out}" if ref.stream else out


def _written(path: tuple) -> tuple:
    """A path as SensorBee compares GROUP BY columns: as written, so ``a["x"]`` is not ``a.x``."""
    return tuple((step_key(s), isinstance(s, KeyStep) and s.bracket) for s in path)


class _Groups:
    """The grouping keys of one SELECT; answers whether a field reference is grouped."""

    def __init__(self, select: Select):
        self.keys = [(g.stream, _written(g.path)) for g in select.group_by if isinstance(g, FieldRef)]
        self.windowed = any(isinstance(f, WindowFunction) for f in select.from_items)
        if self.windowed and any(len(p) == 1 and p[0][0][1] in WINDOW_COLUMNS for _, p in self.keys):
            # window_start and window_end determine each other
            streams = {s for s, p in self.keys if len(p) == 1 and p[0][0][1] in WINDOW_COLUMNS}
            for s in streams:
                self.keys += [(s, ((("key", c), False),)) for c in WINDOW_COLUMNS]

    def has(self, ref: FieldRef) -> bool:
        """True when ``ref`` is one of the GROUP BY keys. The whole path must match: SensorBee compares
        the column as written (``GROUP BY a`` does not group ``a.b``, transform_plan.go)."""
        path = _written(ref.path)
        return any(s == ref.stream and path == p for s, p in self.keys)


def _check_group_by(select: Select, ctx: Context) -> None:
    for key in select.group_by:
        for call in aggregates_in(key, ctx):
            raise fail(f"aggregate function '{call.name}' cannot be used in GROUP BY", call)
        if not isinstance(key, FieldRef):
            raise fail("grouping by expressions is not supported yet", key)


def _check_where(select: Select, ctx: Context) -> None:
    for call in aggregates_in(select.left_join_on, ctx):
        raise fail(f"aggregate function '{call.name}' cannot be used in ON", call)
    for call in aggregates_in(select.where, ctx):
        raise fail(f"aggregate function '{call.name}' cannot be used in WHERE", call)


def check_nested(exprs, ctx: Context) -> None:
    """No aggregate call inside the arguments (or ORDER BY) of another aggregate."""
    for expr in exprs:
        for call in aggregates_in(expr, ctx):
            for child in call.children():
                for inner in aggregates_in(child, ctx):  # type: ignore[arg-type]
                    raise fail(
                        f"aggregate functions cannot be nested: '{inner.name}' inside '{call.name}'", inner
                    )


def _check_ungrouped(expr: Expr, groups: _Groups, ctx: Context, clause: str) -> None:
    """Fields outside aggregates must be grouped; ``*`` and ``ts()`` are not allowed."""
    stop = lambda n: isinstance(n, FunctionCall) and ctx.is_aggregate(n)  # noqa: E731
    for n in walk(expr, stop):
        if stop(n):
            _check_agg_params(n, groups, ctx)  # type: ignore[arg-type]
        elif isinstance(n, Wildcard):
            raise fail("'*' cannot be used with GROUP BY or aggregate functions", n)
        elif isinstance(n, TimestampRef):
            raise fail("ts() cannot be used with GROUP BY or aggregate functions", n)
        elif isinstance(n, FieldRef) and not groups.has(n):
            raise fail(
                f"field '{field_text(n)}' in {clause} must be grouped by GROUP BY or used in an aggregate function",
                n,
            )


def _check_agg_params(call: FunctionCall, groups: _Groups, ctx: Context) -> None:
    flags = ctx.aggregation_params(call)
    for arg, is_agg in zip(call.args, flags):
        if is_agg:
            continue
        for n in walk(arg):
            if isinstance(n, FieldRef) and not groups.has(n):
                raise fail(
                    f"non-aggregation parameter of '{call.name}' must be a grouped field or a constant:"
                    f" '{field_text(n)}'",
                    n,
                )
            if isinstance(n, (Wildcard, TimestampRef)):
                raise fail(f"non-aggregation parameter of '{call.name}' must be a grouped field or a constant", n)


def is_aggregating(select: Select, ctx: Context) -> bool:
    """True if the SELECT groups or uses an aggregate in its select list or HAVING."""
    if select.group_by:
        return True
    exprs: list[Node] = [p.expr for p in select.projections]
    if select.having is not None:
        exprs.append(select.having)
    return any(True for e in exprs for _ in aggregates_in(e, ctx))  # type: ignore[arg-type]


def check_aggregates(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        _check_where(select, ctx)
        _check_group_by(select, ctx)
        check_nested([e for _, e in select_exprs(select)], ctx)
        # SensorBee: a HAVING clause alone puts the query in grouping mode (transform_plan.go)
        grouping = is_aggregating(select, ctx) or (select.having is not None and select.emitter is not None)
        if not grouping:
            continue
        groups = _Groups(select)
        for p in select.projections:
            _check_ungrouped(p.expr, groups, ctx, "the select list")
        if select.having is not None:
            _check_ungrouped(select.having, groups, ctx, "HAVING")
