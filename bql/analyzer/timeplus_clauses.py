"""Timeplus query forms that read differently from SensorBee's (docs/timeplus.md).

A *Timeplus query* is a SELECT that runs in the Timeplus window operator: it has an EMIT clause, or a
``tumble`` / ``hop`` / ``session`` FROM item, or reads a bare stream without a RANGE window (the one rule
``timeplus_query.is_timeplus_select``, which ``runtime.build_processor`` follows too). Only there:

- ``prepare_timeplus`` (a rewrite before analysis): ``count()`` means ``count(*)``, and in HAVING an
  unprefixed field that names a select-list alias (``AS c``, a single key) stands for that item's
  expression, as in Proton/ClickHouse where an alias wins over an input column of the same name.
  SensorBee queries keep SensorBee's reading (``count()`` is an arity error, ``c`` in HAVING is the
  input field ``c``). Selects inside subqueries (CTE references) are prepared the same way.
- ``prepare_timeplus`` also resolves an EMIT written without a policy (``EMIT LAST 1h``, ``EMIT TIMEOUT
  5s``): ``AFTER WATERMARK`` over a window function, Proton's ``PERIODIC 2s`` over a bare stream.
- ``check_timeplus_clauses``: ``AND TIMEOUT`` needs an aggregation over tumble/hop/session; ``AND LAST``
  on a global aggregation needs the PERIODIC policy (elsewhere it is accepted and changes nothing:
  sbpy keeps no history to backfill); ``OFFSET`` needs a Timeplus query without ORDER BY; ``lag(x[, n[, d]])``
  stands only in the select list of a non-aggregating Timeplus query, outside other ``lag`` calls,
  with ``n`` an integer literal from 1 to ``MAX_LAG``; ``emit_version()`` stands only in the select list
  or HAVING of an aggregating Timeplus query, outside aggregate calls; ``PERIODIC ... REPEAT`` cannot
  take ``ON UPDATE``. ``PARTITION BY`` and ``SETTINGS``: ``timeplus_settings``.
"""
from __future__ import annotations

import dataclasses

from ..ast import (
    FieldRef,
    FunctionCall,
    Interval,
    KeyStep,
    Literal,
    Select,
    SelectUnion,
    Statement,
    SubqueryRef,
    Wildcard,
    WindowFunction,
)
from ..history_query import is_table_query
from ..timeplus_query import is_timeplus_select
from ..transform_base import rewrite as transform
from .aggregates import is_aggregating
from .context import Context, fail, select_exprs, selects_of, walk
from .timeplus_settings import check_query_clauses

MAX_LAG = 1_048_575  # rows a lag call may look back (SensorBee's largest RANGE n TUPLES)


# ---------------------------------------------------------------- rewrite (prepare)


def _count_star(node):
    if isinstance(node, FunctionCall) and node.name == "count" and not node.args and not node.order_by:
        return dataclasses.replace(node, args=(Wildcard(None, span=node.span),))
    return node


def _aliases(projections) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in projections:
        label = p.alias
        if label is None or label.star or len(label.steps) != 1 or not isinstance(label.steps[0], KeyStep):
            continue
        out.setdefault(label.steps[0].key, p.expr)
    return out


def _alias_key(node) -> str | None:
    if (isinstance(node, FieldRef) and node.stream is None and len(node.path) == 1
            and isinstance(node.path[0], KeyStep) and not node.path[0].bracket):
        return node.path[0].key
    return None


def _substitute_aliases(expr, aliases: dict[str, object]):
    """``expr`` with every alias reference replaced by its item's expression. ``transform`` rebuilds
    bottom-up, so a substituted expression is not searched again: ``max(v) AS v ... HAVING v > 1``
    reads ``max(v) > 1``."""
    def swap(node):
        key = _alias_key(node)
        return aliases[key] if key is not None and key in aliases else node

    return transform(expr, swap)


GLOBAL_PERIOD = Interval(2, "seconds", "2s")  # Proton's default emission of a global aggregation


def _windowed(select: Select) -> bool:
    return any(isinstance(item, WindowFunction) for item in select.from_items)


def _resolve_emit(select: Select):
    emit = select.emit
    if emit is None or not emit.implicit or emit.kind != "after_watermark":
        return emit
    if _windowed(select):
        return emit
    return dataclasses.replace(emit, kind="periodic", period=GLOBAL_PERIOD)


def _prepare_subqueries(select: Select) -> Select:
    items = []
    for item in select.from_items:
        if isinstance(item, SubqueryRef):
            inner = item.select
            if isinstance(inner, Select):
                inner = prepare_timeplus(inner)
            elif isinstance(inner, SelectUnion):
                branches = tuple(prepare_timeplus(s) for s in inner.selects)
                if branches != inner.selects:
                    inner = dataclasses.replace(inner, selects=branches)
            if inner is not item.select:
                item = dataclasses.replace(item, select=inner)
        items.append(item)
    items = tuple(items)
    return select if items == select.from_items else dataclasses.replace(select, from_items=items)


def prepare_timeplus(select: Select) -> Select:
    """``select`` with the Timeplus readings of ``count()``, HAVING aliases and a policy-less EMIT applied
    (others unchanged), in the selects of its subqueries (CTEs) too."""
    select = _prepare_subqueries(select)
    if not is_timeplus_select(select):
        return select
    changes = {}
    emit = _resolve_emit(select)
    if emit is not select.emit:
        changes["emit"] = emit
    projections = tuple(transform(p, _count_star) for p in select.projections)
    if projections != select.projections:
        changes["projections"] = projections
    having = select.having
    if having is not None:
        having = _substitute_aliases(transform(having, _count_star), _aliases(projections))
        if having != select.having:
            changes["having"] = having
    return dataclasses.replace(select, **changes) if changes else select


# ---------------------------------------------------------------- checks


def _calls(expr, name: str, stop_at_aggregates: Context | None = None):
    stop = None
    if stop_at_aggregates is not None:
        def stop(n):
            return isinstance(n, FunctionCall) and stop_at_aggregates.is_aggregate(n)
    for node in walk(expr, stop):
        if isinstance(node, FunctionCall) and node.name == name:
            yield node


def _check_lag(select: Select, timeplus: bool, ctx: Context) -> None:
    for clause, expr in select_exprs(select):
        for call in _calls(expr, "lag"):
            if not timeplus or clause != "select":
                raise fail("lag() can only be used in the select list of a Timeplus query "
                           "(tumble/hop/session, a bare stream or EMIT)", call)
            if is_aggregating(select, ctx):
                raise fail("lag() cannot be used in an aggregating query; it looks back over emitted rows "
                           "of a streaming tail", call)
            if len(call.args) > 1:
                n = call.args[1]
                if not (isinstance(n, Literal) and type(n.value) is int and 1 <= n.value <= MAX_LAG):
                    raise fail(f"the offset of lag() must be an integer literal from 1 to {MAX_LAG}", n)
            for arg in call.args:
                for inner in _calls(arg, "lag"):
                    raise fail("lag() cannot be nested in another lag()", inner)


def _check_emit_version(select: Select, timeplus: bool, ctx: Context) -> None:
    aggregating = timeplus and is_aggregating(select, ctx)
    for clause, expr in select_exprs(select):
        for call in _calls(expr, "emit_version"):
            if not aggregating or clause not in ("select", "having"):
                raise fail("emit_version() can only be used in the select list or HAVING of an "
                           "aggregating Timeplus query", call)
        for agg in walk(expr):
            if isinstance(agg, FunctionCall) and ctx.is_aggregate(agg):
                for arg in agg.args:
                    for call in _calls(arg, "emit_version"):
                        raise fail("emit_version() cannot be an aggregate's argument", call)


def _check_emit_extras(select: Select, ctx: Context) -> None:
    emit = select.emit
    if emit is None:
        return
    aggregating = is_aggregating(select, ctx)
    if emit.timeout is not None and not (_windowed(select) and aggregating):
        raise fail("EMIT ... TIMEOUT needs an aggregation over tumble, hop or session", emit.timeout)
    if emit.last is not None and aggregating and not _windowed(select) and emit.kind != "periodic":
        raise fail("EMIT LAST on a global aggregation needs EMIT PERIODIC (its default)", emit.last)
    if emit.on_update and emit.repeat:
        raise fail("EMIT PERIODIC ... REPEAT emits every group; it cannot be combined with ON UPDATE", emit)


def check_timeplus_clauses(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        timeplus = is_timeplus_select(select)
        _check_emit_extras(select, ctx)
        if select.offset is not None and not is_table_query(select):  # a table() query: analyzer.history
            if not timeplus:
                raise fail("OFFSET can only be used in a Timeplus query (tumble/hop/session, a bare stream "
                           "or EMIT)", select)
            if select.order_by:
                raise fail("OFFSET cannot be combined with ORDER BY", select.order_by[0])
        _check_lag(select, timeplus, ctx)
        _check_emit_version(select, timeplus, ctx)
        check_query_clauses(select, timeplus, ctx)
