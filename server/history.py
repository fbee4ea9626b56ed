"""``table(source)`` in a running topology: which history exists, reading it, and the bounded query.

**What history exists.** A source keeps history only when it is created with the ``history``
parameter: ``CREATE SOURCE s TYPE ... WITH ..., history = 1000`` keeps the last 1000 tuples ``s``
emitted in its journal log (``JournalWriter.retain``; the pruner never removes them). ``table(s)`` is
those tuples — the last ``n`` the source emitted before the query started (all of them while it has
emitted fewer), oldest first, with their timestamps. A source created without it, a stream, or an
unknown name is refused when the statement is issued (``check_tables``). The parameter is also handed
to the source's plugin, which ignores it like any unknown parameter (the built-in sources do).

Streams have no history: a stream's output is journaled only while another query shares it, so what a
``table()`` of it would hold depends on who read it when. Read the source's history and compute over
it instead (a table query can filter and aggregate).

**Reading.** ``read_history`` pins the node's retained range (``pin_history``), reads its log with the
journal reader every query uses, and keeps the last ``n`` tuples; the pin keeps a concurrent prune from
removing what it reads. The snapshot is read once, when the query starts (``bind_plan``): a query
joining ``table(t)`` sees the rows of that moment for its whole life, and a restarted query continues
with the rows its state holds.

**Table queries** (``SELECT ... FROM table(s)`` only) run on the driver when the SELECT is issued
(``select_table``): the snapshot is read, ``runtime.history.TableQueryProcessor`` computes the result,
and the cursor yields its rows and ends. A stream defined by a table query is refused (it would be
bounded; issue the SELECT instead).
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from typing import Any

from sbpy.bql import ast
from sbpy.bql.errors import BQLError
from sbpy.bql.history_query import history_streams, is_table_query, reads_history
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.spark import journal_format as jf

from .node_update import fail, fold_params
from .nodes.cursor import SelectCursor

log = logging.getLogger("sbpy.history")

HISTORY_PARAM = "history"


def retain_history(topology: Any, name: str, stmt: Any) -> None:
    """Apply a CREATE SOURCE's ``history = n`` parameter to the journal (no parameter: no history)."""
    params = fold_params(stmt.params)
    if HISTORY_PARAM not in params:
        return
    value = params[HISTORY_PARAM]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(f"the '{HISTORY_PARAM}' parameter of source '{name}' must be a non-negative integer "
                   f"(the number of tuples table() keeps), not {value!r}", stmt)
    topology.journal.retain(name, value)


def check_tables(topology: Any, select: Any, stmt: Any, own: str | None = None) -> None:
    """Every ``table(x)`` of ``select`` names a source that keeps history; a stream (``stmt`` a CREATE
    STREAM, named ``own``) cannot be a table query."""
    if isinstance(stmt, ast.CreateStreamAsSelect) and not hasattr(select, "selects") and is_table_query(select):
        raise fail(f"stream '{own}' cannot be defined over table() alone: a query over table() is bounded "
                   "(issue the SELECT itself)", stmt)
    for name in history_streams(select):
        if name in topology.sources:
            if topology.journal.retained(name) == 0:
                raise fail(f"source '{name}' keeps no history for table(): create it WITH "
                           f"{HISTORY_PARAM} = n (its last n tuples)", stmt)
        elif name in topology.streams:
            raise fail(f"table() reads a source's history; stream '{name}' keeps none", stmt)
        elif name in topology.sinks:
            raise fail(f"'{name}' is a sink and cannot be read from", stmt)
        else:
            raise fail(f"stream '{name}' was not found", stmt)


def read_history(journal: Any, node: str) -> list[Tuple]:
    """The last ``journal.retained(node)`` tuples of ``node`` up to the journal's HEAD now, oldest first
    (none for a node without history)."""
    keep = journal.retained(node)
    if not keep:
        return []
    pin, after, upto = journal.pin_history(node)
    try:
        rows = jf.read_log(jf.node_log_path(journal.dir, node), node, after, upto)
    finally:
        journal.unpin(pin)
    tuples = [r for r in rows if r[3] is not None and not r[4]][-keep:]
    return [Tuple(jf.decode_data(text), jf.us_to_ts(ts_us), seq, node) for seq, _inp, ts_us, text, _e, _err
            in tuples]


def bind_plan(topology: Any, plan: Any) -> Any:
    """``plan`` with the history snapshot bound into every stage statement reading ``table()``."""
    from sbpy.bql.runtime.history import bind_tables

    stages = []
    for stage in plan.stages:
        statement = stage.statement
        if statement is not None and not hasattr(statement, "selects") and reads_history(statement):
            statement = bind_tables(statement, lambda n: read_history(topology.journal, n))
            stage = dataclasses.replace(stage, statement=statement)
        stages.append(stage)
    return dataclasses.replace(plan, stages=tuple(stages))


def explain_table(select: Any, text: str) -> dict[str, Any]:
    """EXPLAIN's answer for a table query: it runs once, on the driver, when it is issued."""
    names = ", ".join(history_streams(select))
    return {"execution": "table", "inputs": [], "tick_ms": 0,
            "reason": f"a query over table() reads the retained history of {names} once, on the driver, "
                      "when it is issued, answers its result and ends",
            "stages": [{"node": "(select)", "kernel": "table", "runs_on": "driver", "inputs": [],
                        "statement": text}]}


def select_table(topology: Any, parsed: Any) -> SelectCursor:
    """Run the table query ``parsed`` now (the caller holds the statement lock); its cursor yields the
    result's rows, then ends. Dropped rows are logged, as a query's dropped tuples are."""
    from sbpy.bql.runtime import build_processor
    from sbpy.bql.runtime.history import bind_tables

    stmt = parsed.stmt
    check_tables(topology, stmt, stmt)
    bound = bind_tables(stmt, lambda n: read_history(topology.journal, n))
    try:
        result = build_processor(bound, topology.processor_context()).run()
    except BQLError as e:
        if e.span is None:
            e.span = getattr(stmt, "span", None)
        raise
    for d in result.dropped:
        log.info("topology '%s': table() query dropped a row: %s", topology.name, d.error)
    cursor = SelectCursor()

    def feed() -> None:
        for out in result.outputs:
            if not cursor.put(out.data):
                break
        cursor.finish()

    threading.Thread(target=feed, name="sbpy-table-select", daemon=True).start()
    return cursor
