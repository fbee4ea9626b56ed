"""Which Timeplus window stages run keyed (pure Python): ``window_keys`` and the reason for the others.

A stage runs by key (``keyed_window_route`` → ``keyed_window_bucket``) when its form is::

    SELECT [RSTREAM] ... FROM tumble|hop(src, [time,] ...) [WHERE ...]
    GROUP BY <plain fields>, window_start[, window_end] [HAVING ...] [EMIT AFTER WATERMARK [WITH DELAY d]]

with at least one plain field key: then every group lives in one key, a window's groups are the union of
its keys' groups, and what is order-dependent — the watermark, lateness, which tuple closes a window —
is decided by the router's ordered pass (design/timeplus-semantics.md §4). Anything else (``session``,
``EMIT ON UPDATE`` / ``PERIODIC``, ``LIMIT`` / ``OFFSET``, ``ORDER BY``, ``DISTINCT``, ``PARTITION BY``
substreams, ``lag`` / ``emit_version``, processing-time windows, emitter options, no plain key) stays in
the sequential operator, and ``window_verdict`` says why.
"""
from __future__ import annotations

from typing import Any

WINDOW_COLUMNS = ("window_start", "window_end")


def _statement(spec: Any) -> Any:
    if spec.statement is not None:
        return spec.statement
    from sbpy.bql.ast import CreateStreamAsSelect
    from sbpy.bql.parser import parse_one

    stmt = parse_one(spec.bql_text)
    return stmt.select if isinstance(stmt, CreateStreamAsSelect) else stmt


def plain_field(expr: Any, alias: str) -> str | None:
    """The field name of ``f`` / ``alias:f`` (one key step), else None."""
    from sbpy.bql.ast import FieldRef, KeyStep

    if not isinstance(expr, FieldRef) or len(expr.path) != 1 or not isinstance(expr.path[0], KeyStep):
        return None
    if expr.stream not in (None, alias):
        return None
    return expr.path[0].key


def window_verdict(spec: Any) -> tuple[tuple[str, ...] | None, str]:
    """``(plain key fields, "")`` when the stage is a keyed-eligible Timeplus window aggregation, else
    ``(None, why not)`` (``why`` is "" for a stage that is no Timeplus window query at all)."""
    if spec.factory is not None or len(spec.inputs) != 1 or not spec.bql_text:
        return None, ""
    try:
        from sbpy.bql.ast import Select, WindowFunction
        from sbpy.bql.timeplus_query import is_streaming_tail

        stmt = _statement(spec)
    except Exception:  # noqa: BLE001 - not ours to report: the sequential path reports it
        return None, ""
    if not isinstance(stmt, Select) or len(stmt.from_items) != 1 or not isinstance(stmt.from_items[0], WindowFunction):
        return None, ""
    item = stmt.from_items[0]
    kind = item.kind.lower()
    if kind not in ("tumble", "hop"):
        return None, (f"{kind} windows are not keyed yet (the ordered pass would need every key's session "
                      "bounds: WHERE and the group key read window_start / window_end)")
    if item.source is not None:
        return None, "the window reads a subquery"
    why = _unsupported_clause(stmt, is_streaming_tail)
    if why:
        return None, why
    try:
        from sbpy.bql.runtime.timeplus.streaming_calls import uses_streaming_calls
        from sbpy.bql.runtime.timeplus.timecol import is_processing_time

        if uses_streaming_calls(stmt):
            return None, "lag / emit_version keep state across the whole stream"
        if is_processing_time(item.time_expr):
            return None, "processing-time windows close on the operator's clock"
    except Exception:  # noqa: BLE001
        return None, ""
    alias = item.alias or item.stream
    keys = []
    for g in stmt.group_by:
        name = plain_field(g, alias)
        if name is None:
            return None, "a GROUP BY item is not a plain field"
        if name not in WINDOW_COLUMNS:
            keys.append(name)
    if not keys:
        return None, "no plain GROUP BY key besides the window columns: every tuple is one group's"
    if "window_start" not in [plain_field(g, alias) for g in stmt.group_by]:
        return None, "GROUP BY does not hold window_start"
    return tuple(keys), ""


def _unsupported_clause(stmt: Any, is_streaming_tail: Any) -> str:
    emit = stmt.emit
    if emit is not None and emit.kind != "after_watermark":
        return f"EMIT {emit.kind.replace('_', ' ').upper()} emits per tuple or on the clock, in one global order"
    if emit is not None and (emit.timeout is not None or emit.last is not None):
        return "EMIT ... AND TIMEOUT / LAST reads the arrival clock of the whole stream"
    if stmt.limit is not None or stmt.offset is not None:
        return "LIMIT / OFFSET count the rows of all keys"
    if stmt.left_join_on is not None:
        return "a LEFT JOIN"
    if stmt.order_by or stmt.distinct:
        return "ORDER BY / DISTINCT look at the rows of all keys"
    if stmt.partition_by:
        return "PARTITION BY substreams run in one operator"
    if stmt.emitter_options:
        return "emitter options count the tuples of all keys"
    if stmt.emitter not in (None, "rstream"):
        return f"{stmt.emitter.upper()} compares with the previous relation"
    if not stmt.group_by:
        return "no GROUP BY"
    if is_streaming_tail(stmt):
        return "a streaming tail"
    return ""


def window_keys(spec: Any) -> tuple[str, ...] | None:
    """The plain GROUP BY fields of a keyed-eligible Timeplus window stage, else None."""
    return window_verdict(spec)[0]
