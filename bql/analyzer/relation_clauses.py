"""Rules for the SQL clauses that shape a step's relation (``DISTINCT``, ``ORDER BY``) and for LIKE
patterns written as constants (docs/sql-breadth.md).

- ``DISTINCT`` and ``ORDER BY`` are run by the BQL SELECT kernel only: a Timeplus query (window
  function, bare stream, EMIT) and a MATCH_RECOGNIZE query reject them, as does a SELECT without an
  emitter — except ORDER BY over MATCH_RECOGNIZE, which sorts the match rows each step emits (the seed
  001 query's ``ORDER BY MR.symbol, MR.start_tstamp``).
- ``ORDER BY`` sorts the SELECT's output rows, so its keys read the output row: fields are output
  columns (written without a stream prefix), and ``*``, ``s:*``, ``ts()`` and aggregate calls are errors
  (name the aggregate in the select list and sort by its label). When the select list has no ``*`` and
  no ``AS *``, a key's first field name must be one of the output columns.
- A constant ``LIKE`` pattern or ``ESCAPE`` that can never be used (an escape that is not one
  character, a pattern whose escape character is not followed by ``%``, ``_`` or itself) is an error
  at once rather than on every tuple.
"""
from __future__ import annotations

from ..ast import (
    FieldRef,
    FunctionCall,
    KeyStep,
    Like,
    Literal,
    MatchRecognize,
    Select,
    Statement,
    StreamRef,
    TimestampRef,
    Wildcard,
    WindowFunction,
)
from ..errors import BQLEvaluationError
from .aggregates import field_text
from .context import Context, fail, selects_of, walk


def _kernel_problem(select: Select) -> str | None:
    """Why ``select`` does not run on the BQL SELECT kernel, or None."""
    if any(isinstance(f, MatchRecognize) for f in select.from_items):
        return "a MATCH_RECOGNIZE query"
    if select.emit is not None or any(isinstance(f, WindowFunction) for f in select.from_items):
        return "a Timeplus window query"
    if any(isinstance(f, StreamRef) and f.window is None for f in select.from_items):
        return "a query over a stream without RANGE"
    if select.emitter is None:
        return "a SELECT without RSTREAM, ISTREAM or DSTREAM"
    return None


def output_columns(select: Select) -> set[str] | None:
    """The top-level keys of the SELECT's output rows, or None when a wildcard makes them unknown."""
    from ..runtime.projection import default_label

    names: set[str] = set()
    for pos, proj in enumerate(select.projections):
        if proj.alias is not None:
            if proj.alias.star:
                return None
            names.add(proj.alias.steps[0].key)
        elif isinstance(proj.expr, Wildcard):
            return None
        else:
            names.add(default_label(proj.expr, pos))
    return names


def check_relation_clauses(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        clause = "DISTINCT" if select.distinct else "ORDER BY" if select.order_by else None
        if clause is None:
            continue
        problem = _kernel_problem(select)
        if clause == "ORDER BY" and problem == "a MATCH_RECOGNIZE query":
            problem = None  # sorts the match rows of each step (runtime/match/processor.py)
        if problem is not None:
            at = select.order_by[0] if clause == "ORDER BY" else select
            raise fail(f"{clause} is not supported in {problem} (yet); "
                       "read its output from a stream with a RANGE window instead", at)
        _check_order_keys(select, ctx)


def _check_order_keys(select: Select, ctx: Context) -> None:
    columns = output_columns(select)
    for key in select.order_by:
        for n in walk(key.expr):
            if isinstance(n, (Wildcard, TimestampRef)) or (isinstance(n, FieldRef) and n.stream):
                what = "'*'" if isinstance(n, Wildcard) else "ts()" if isinstance(n, TimestampRef) \
                    else f"'{field_text(n)}'"
                raise fail(f"ORDER BY sorts the output rows: {what} cannot be used there; "
                           "refer to output columns by their names", n)
            if isinstance(n, FunctionCall) and ctx.is_aggregate(n):
                raise fail(f"ORDER BY sorts the output rows: aggregate '{n.name}' cannot be used there; "
                           f"add it to the select list (e.g. {n.name}(...) AS x) and order by its name", n)
            if isinstance(n, FieldRef) and columns is not None:
                first = n.path[0]
                if isinstance(first, KeyStep) and first.key not in columns:
                    known = ", ".join(sorted(columns))
                    raise fail(f"ORDER BY refers to '{field_text(n)}', which is not an output column "
                               f"(columns: {known})", n)


def check_like_patterns(stmt: Statement, ctx: Context) -> None:
    from ..eval.predicates import check_escape, like_regex

    for n in walk(stmt):
        if not isinstance(n, Like) or not isinstance(n.pattern, Literal):
            continue
        escape = n.escape
        if escape is not None and not isinstance(escape, Literal):
            continue
        pattern, esc = n.pattern.value, (escape.value if escape is not None else None)
        if type(pattern) is not str or (escape is not None and esc is None):
            continue
        try:
            like_regex(pattern, check_escape(esc))
        except BQLEvaluationError as err:
            raise fail(err.message, n) from None
