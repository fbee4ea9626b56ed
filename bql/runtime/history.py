"""``table(stream)`` at run time: binding the history snapshot, the table side of a join, and the
bounded *table query* (docs/timeplus.md, "table()").

**Binding.** A ``HistoryTable`` FROM item carries its snapshot (``snapshot``: a tuple of ``Tuple``) in
the AST; ``bind_tables(select, read)`` fills it in when the query starts (the server reads the node's
retained journal history, a test passes lists). The statement is then self-contained: wherever its
processor is built (the driver, a Spark worker) it sees the same rows. An unbound item reads as empty
(a dry build before the query starts).

**Stream-table join.** In the SELECT kernel (``kernel.Slot``) a ``table(t)`` item is a window that
holds the whole snapshot from the start, in history order, and never changes: no input feeds it and
nothing leaves it (``table_window``). So each arriving stream tuple forms its rows with every table row
(``ON`` / WHERE decide which), exactly as with a RANGE window that happened to hold those rows; the
table is read once when the query starts and is not refreshed (Proton's stream-to-table join does the
same: its right side is read once, when the query starts).

**Table query** (``TableQueryProcessor``; every FROM item a ``table(...)``): the result is computed once
over the snapshot and the query ends (``done``):

1. the relation: the cross product of the tables, first FROM item outermost, each in history order;
   a row is kept when WHERE is true. A row whose WHERE cannot be evaluated is left out and reported
   (``Dropped``, the row's tuple of the last FROM item);
2. a grouping query aggregates the kept rows (one group set, as SensorBee's GROUP BY over one
   relation) and applies HAVING; a failure there fails the result: one ``Dropped``, no rows. Otherwise
   each kept row is projected; a row whose projection fails is left out and reported;
3. DISTINCT, then ORDER BY (``relation_shape``), then OFFSET ``m`` skips ``m`` rows and LIMIT ``n``
   keeps ``n`` (with or without ORDER BY);
4. the rows are emitted in that order (their timestamp: the newest history tuple's, else the start).

Without errors this is the relation the BQL kernel holds after reading the same rows through
``s [RANGE n TUPLES]`` (``n`` at least the history's size) and ``SELECT RSTREAM``: the tests compare
the two.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import itertools
import pickle
from collections.abc import Callable, Sequence
from typing import Any

from ..ast import HistoryTable, RangeWindow, Select
from ..eval import Env, Scope, compile_expr
from .grouping import Grouping, compile_where, is_grouping
from .processor import Dropped, ProcessorContext, StepResult, Tuple
from .projection import SelectList
from .relation_shape import RelationShape
from .windows import Entry, Window

History = Callable[[str], Sequence[Tuple]]  # node name -> its retained tuples, oldest first


def bind_tables(select: Select, read: History) -> Select:
    """``select`` with every ``table(...)`` item's snapshot read with ``read`` (once per node name)."""
    cache: dict[str, tuple] = {}
    items = []
    for item in select.from_items:
        if isinstance(item, HistoryTable):
            if item.stream not in cache:
                cache[item.stream] = tuple(read(item.stream))
            item = dataclasses.replace(item, snapshot=cache[item.stream])
        items.append(item)
    return dataclasses.replace(select, from_items=tuple(items))


def table_rows(item: HistoryTable) -> tuple:
    """The bound snapshot of ``item`` (empty when unbound), each tuple marked as read from the table."""
    alias = item.alias or item.stream
    return tuple(Tuple(t.data, t.ts, t.seq, f"table({alias})") for t in item.snapshot or ())


def table_window(item: HistoryTable, first_eid: int) -> tuple[Window, int]:
    """A window holding ``item``'s snapshot (entries numbered from ``first_eid``) that nothing prunes: a
    tuple window as large as the snapshot, which no input adds to. Returns it and the next free eid."""
    rows = table_rows(item)
    window = Window(RangeWindow(max(len(rows), 1), "tuples"))
    for k, tup in enumerate(rows):
        window.entries.append(Entry(first_eid + k, tup))
    return window, first_eid + len(rows)


def _message(err: Exception) -> str:
    from .kernel import _message as kernel_message

    return kernel_message(err)


class TableQueryProcessor:
    """The bounded query ``SELECT ... FROM table(a) [, table(b) ...]``: ``run()`` computes and returns
    the whole result (module doc) and marks the query done. It reads no input (``inputs`` is empty);
    in a runtime that only ticks, the first ``tick`` runs it (``next_tick`` is due at once until then)."""

    inputs: tuple[str, ...] = ()

    def __init__(self, select: Select, context: ProcessorContext | None = None):
        from .kernel import truth

        context = context or ProcessorContext()
        registry = context.functions
        self.select = select
        self.tables = [table_rows(item) for item in select.from_items]
        self.aliases = tuple(item.alias or item.stream for item in select.from_items)
        self.where = compile_where(select.where, self.aliases, registry)
        self.grouping = Grouping(select, self.aliases, registry) if is_grouping(select, registry) else None
        scope = Scope(self.aliases, registry=registry)
        self.select_list = None if self.grouping else SelectList(
            select.projections, self.aliases, lambda e: compile_expr(e, scope))
        self.shape = RelationShape.of(dataclasses.replace(select, limit=None), registry)
        self.truth = truth
        self.done = False

    def run(self, now: _dt.datetime | None = None) -> StepResult:
        """The query's whole result (empty when it already ran)."""
        result = StepResult(done=True)
        if self.done:
            return result
        self.done = True
        now = now or _dt.datetime.now(_dt.UTC)
        newest = [t.ts for rows in self.tables for t in rows]
        ts = max(newest) if newest else now
        rows = self._relation(now, result)
        try:
            out = self._outputs(rows, now, result)
            if self.shape is not None:
                out = self.shape.apply(out, now)
        except Exception as err:  # the grouping or the shape failed: no result
            result.dropped.append(Dropped(Tuple({}, ts), _message(err), "other"))
            return result
        start = self.select.offset or 0
        stop = None if self.select.limit is None else start + self.select.limit
        result.outputs = [Tuple(data, ts) for data in out[start:stop]]
        return result

    def _relation(self, now: _dt.datetime, result: StepResult) -> list[Env]:
        kept: list[Env] = []
        for combo in itertools.product(*self.tables):
            env = Env(dict(zip(self.aliases, combo)), None, now)
            try:
                if self.where is None or self.truth(self.where(env), "WHERE"):
                    kept.append(env)
            except Exception as err:
                result.dropped.append(Dropped(combo[-1], _message(err), "other"))
        return kept

    def _outputs(self, rows: list[Env], now: _dt.datetime, result: StepResult) -> list[dict[str, Any]]:
        if self.grouping is not None:
            return self.grouping.evaluate([(env, self.grouping.row_key(env)) for env in rows], now)
        out = []
        for env in rows:
            try:
                out.append(self.select_list.evaluate(env))
            except Exception as err:
                result.dropped.append(Dropped(list(env.tuples.values())[-1], _message(err), "other"))
        return out

    # ------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        return StepResult(done=self.done)

    def finish(self, input_name: str) -> StepResult:
        return StepResult(done=self.done)

    def tick(self, now: _dt.datetime) -> StepResult:
        return self.run(now)

    def next_tick(self) -> _dt.datetime | None:
        return None if self.done else _dt.datetime.min.replace(tzinfo=_dt.UTC)

    def snapshot(self) -> bytes:
        return pickle.dumps({"done": self.done})

    def restore(self, data: bytes) -> None:
        self.done = pickle.loads(data)["done"]
