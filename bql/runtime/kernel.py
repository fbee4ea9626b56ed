"""The BQL SELECT kernel: SensorBee's processing model, one arriving tuple at a time.

Each step (one arriving tuple):

1. *window update* — the tuple enters the window of every FROM item reading its input (a self-join
   through aliases has several windows over one input); tuple windows drop what falls out of their
   count, and every time window of the query is pruned with the current tuple's timestamp;
2. *relation* — the cross product of the current windows. Rows containing a pruned entry leave it;
   the WHERE clause is evaluated only on the new combinations (those containing the new tuple) and its
   verdict kept for as long as the combination lives, so volatile functions and errors happen once;
3. *relation-to-relation* — projections (computed once per row and cached) or, for a grouping query,
   GROUP BY / aggregates / HAVING (``grouping.py``);
4. *relation-to-stream* — the emitter (``emitters.py``) compares with the previous successful step.

A failing step (WHERE or projection error) is reported as ``Dropped`` and leaves the emitter's
previous relation untouched; window contents change regardless (SensorBee does the same), and the new
tuple's combinations are not added when the WHERE clause fails on any of them.

``RANGE 1 TUPLES`` + RSTREAM over one stream takes a fast path without relation bookkeeping.
"""
from __future__ import annotations

import datetime as _dt
import itertools
import pickle
from dataclasses import dataclass
from typing import Any

from ..ast import HistoryTable, Select, StreamRef, UdsfCall
from ..errors import BQLError, BQLEvaluationError, UnsupportedFeatureError
from ..eval import Env, Scope, compile_expr
from .emitters import Emitter
from .grouping import Grouping, compile_where, is_grouping
from .history import table_window
from .processor import Dropped, ProcessorContext, StepResult, Tuple
from .projection import SelectList
from .relation_shape import RelationShape
from .udsf import create_udsf
from .windows import Entry, Window


@dataclass(slots=True)
class Row:
    """One combination of window entries that passed WHERE, with its cached results."""

    ids: tuple[int, ...]
    env: Env
    out: dict[str, Any] | None = None  # cached projection (non-grouping queries)
    key: Any = None  # cached group key (grouping queries)
    has_key: bool = False


class Slot:
    """One FROM item: its alias, window and where its tuples come from (a stream, a UDSF, or none: a
    ``table(...)`` item's window holds its history snapshot from the start, ``history.table_window``)."""

    def __init__(self, index: int, item: StreamRef | UdsfCall | HistoryTable, context: ProcessorContext,
                 first_eid: int = 0):
        self.index = index
        self.udsf = None
        self.next_eid = first_eid  # the first eid after this slot's preloaded entries
        self.is_table = isinstance(item, HistoryTable)
        self.table_index = None  # table_index.TableIndex, set by attach_table_indexes
        if self.is_table:
            self.alias = item.alias or item.stream
            self.window, self.next_eid = table_window(item, first_eid)
            self.sources: tuple[str, ...] = ()
            return
        self.alias = item.alias or item.name
        self.window = Window(item.window)
        if isinstance(item, StreamRef):
            self.sources = (item.name,)
        else:
            self.udsf = create_udsf(item, context)
            self.sources = tuple(self.udsf.input_streams())


def truth(value: Any, clause: str) -> bool:
    """A WHERE/HAVING verdict: true keeps the row, false or NULL drops it, anything else is an error."""
    if value is True or value is False:
        return value
    if value is None:
        return False
    raise BQLEvaluationError(f"the {clause} clause must be a bool, not {type(value).__name__}: {value!r}")


def _message(err: Exception) -> str:
    if isinstance(err, BQLError):
        return str(err)
    return f"{type(err).__name__}: {err}"


class SelectProcessor:
    """The per-tuple kernel of one ``SELECT ISTREAM|RSTREAM|DSTREAM ... FROM ... [RANGE ...]``."""

    def __init__(self, select: Select, context: ProcessorContext | None = None):
        self.select = select
        self.context = context = context or ProcessorContext()
        registry = context.functions
        self.slots: list[Slot] = []
        next_eid = 0
        for i, item in enumerate(select.from_items):
            if not isinstance(item, (StreamRef, UdsfCall, HistoryTable)):
                raise UnsupportedFeatureError(f"the BQL kernel cannot read a {type(item).__name__}")
            self.slots.append(Slot(i, item, context, next_eid))
            next_eid = self.slots[-1].next_eid
        self.aliases = tuple(s.alias for s in self.slots)
        self.inputs: tuple[str, ...] = tuple(dict.fromkeys(n for s in self.slots for n in s.sources))
        self.where = compile_where(select.where, self.aliases, registry)
        if any(s.is_table for s in self.slots) and select.left_join_on is None:
            from . import use_incremental
            from .table_index import attach_table_indexes

            if use_incremental(context):  # the reference kernel enumerates every table row
                attach_table_indexes(self.slots, select.where, self.aliases, registry)
        self.grouping = Grouping(select, self.aliases, registry) if is_grouping(select, registry) else None
        scope = Scope(self.aliases, registry=registry)
        self.select_list = None if self.grouping else SelectList(
            select.projections, self.aliases, lambda e: compile_expr(e, scope))
        self.emitter = Emitter(select.emitter or "rstream")
        self.shape = RelationShape.of(select, registry)  # DISTINCT / ORDER BY / top-N
        self.limit = select.limit if not select.order_by else None  # with ORDER BY: the top-N
        only = self.slots[0] if len(self.slots) == 1 else None
        self.fast = (only is not None and only.udsf is None and self.grouping is None
                     and self.shape is None
                     and self.emitter.kind == "rstream" and only.window.unit == "tuples"
                     and only.window.size == 1)
        self.rows: list[Row] = []
        self.next_eid = next_eid  # table() slots hold their snapshot's entries from the start
        self.emitted = 0
        self.done = False

    # ------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        result = StepResult()
        if self.done:
            result.done = True
            return result
        direct = [s.index for s in self.slots if s.udsf is None and tup.input in s.sources]
        if direct:
            self._step(tup, direct, result)
        for slot in self.slots:
            if slot.udsf is not None and tup.input in slot.sources and not self.done:
                try:
                    produced = slot.udsf.process(tup)
                except Exception as err:  # a UDSF failure drops only this tuple
                    result.dropped.append(Dropped(tup, _message(err), "input"))
                    continue
                for out in produced:
                    if self.done:
                        break
                    self._step(out, [slot.index], result)
        result.done = self.done
        return result

    def finish(self, input_name: str) -> StepResult:
        return StepResult(done=self.done)

    def tick(self, now: _dt.datetime) -> StepResult:
        """Source-like UDSFs generate their tuples here; each is one step of the query."""
        result = StepResult()
        for slot in self.slots:
            if slot.udsf is None or self.done:
                continue
            try:
                produced = slot.udsf.generate(now)
            except Exception as err:
                result.dropped.append(Dropped(Tuple({}, now), _message(err), "other"))
                continue
            for out in produced:
                if self.done:
                    break
                self._step(out, [slot.index], result)
        result.done = self.done
        return result

    # ------------------------------------------------------------ one step

    def _step(self, tup: Tuple, targets: list[int], result: StepResult) -> None:
        now = _dt.datetime.now(_dt.UTC)  # now() is one instant per step
        try:
            rows = self._fast_rows(tup, now) if self.fast else self._relation_rows(tup, targets, now)
            if self.shape is not None:
                rows = self.shape.apply(rows, now)
        except Exception as err:  # per-tuple isolation: only this step is lost
            result.dropped.append(Dropped(tup, _message(err), "other"))
            return
        for data in self.emitter.emit(rows):
            if self.limit is not None and self.emitted >= self.limit:
                break
            result.outputs.append(Tuple(_copy(data), tup.ts, tup.seq, ""))
            self.emitted += 1
        if self.limit is not None and self.emitted >= self.limit:
            self.done = True

    def _fast_rows(self, tup: Tuple, now: _dt.datetime) -> list[dict[str, Any]]:
        env = Env({self.aliases[0]: tup}, None, now)
        if self.where is not None and not truth(self.where(env), "WHERE"):
            return []
        return [self.select_list.evaluate(env)]

    def _admit(self, tup: Tuple, targets: list[int]) -> tuple[dict[int, Entry], set[int]]:
        """Add ``tup`` as a new entry to the window of each slot in ``targets``, then prune every window
        to ``tup``'s time; the new entries by slot index and the eids of the entries that left."""
        removed: set[int] = set()
        new: dict[int, Entry] = {}
        for k in targets:
            entry = Entry(self.next_eid, tup)
            self.next_eid += 1
            new[k] = entry
            removed.update(e.eid for e in self.slots[k].window.add(entry))
        for slot in self.slots:
            removed.update(e.eid for e in slot.window.prune(tup.ts))
        return new, removed

    def _relation_rows(self, tup: Tuple, targets: list[int], now: _dt.datetime) -> list[dict[str, Any]]:
        new, removed = self._admit(tup, targets)
        if removed:
            self.rows = [r for r in self.rows if removed.isdisjoint(r.ids)]
        fresh = self._new_rows(new, now)
        self.rows.extend(fresh)
        return self._outputs(self.rows, now)

    def _outputs(self, rows: list[Row], now: _dt.datetime) -> list[dict[str, Any]]:
        """The step's output rows from its relation: grouped and aggregated, or each row's projection
        (group keys and projections are computed once per row and cached on it)."""
        if self.grouping is not None:
            keyed = []
            for row in rows:
                if not row.has_key:
                    row.key, row.has_key = self.grouping.row_key(row.env), True
                keyed.append((row.env, row.key))
            return self.grouping.evaluate(keyed, now)
        out = []
        for row in rows:
            if row.out is None:
                row.out = self.select_list.evaluate(row.env)
            out.append(row.out)
        return out

    def _new_rows(self, new: dict[int, Entry], now: _dt.datetime) -> list[Row]:
        """The combinations that contain a new entry and pass WHERE (all or nothing on error)."""
        fresh: list[Row] = []
        order = list(new)  # FROM items the tuple entered, in FROM order
        for i, k in enumerate(order):
            choices = []
            for slot in self.slots:
                hits = None if slot.table_index is None else slot.table_index.candidates(
                    slot.window, k, new[k].tuple)  # table(): only rows WHERE's first conjunct may keep
                entries = list(slot.window.entries) if hits is None else hits
                if slot.index == k:
                    entries = [new[k]]
                elif slot.index in new and order.index(slot.index) < i:
                    entries = [e for e in entries if e.eid != new[slot.index].eid]
                choices.append(entries)
            for combo in itertools.product(*choices):
                env = Env({s.alias: e.tuple for s, e in zip(self.slots, combo)}, None, now)
                if self.where is None or truth(self.where(env), "WHERE"):
                    fresh.append(Row(tuple(e.eid for e in combo), env))
        return fresh

    # ------------------------------------------------------------ snapshot / restore

    def snapshot(self) -> bytes:
        state = {
            "next_eid": self.next_eid,
            "windows": [s.window.state() for s in self.slots],
            "rows": [(r.ids, r.out, r.key, r.has_key) for r in self.rows],
            "emitter": self.emitter.state(),
            "emitted": self.emitted,
            "done": self.done,
            "udsfs": [s.udsf for s in self.slots],
        }
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        state = pickle.loads(data)
        self.next_eid = state["next_eid"]
        by_eid: dict[int, Tuple] = {}
        for slot, wstate, udsf in zip(self.slots, state["windows"], state["udsfs"]):
            slot.window.load(wstate)
            slot.udsf = udsf
            by_eid.update((e.eid, e.tuple) for e in slot.window.entries)
        self.rows = []
        for ids, out, key, has_key in state["rows"]:
            env = Env({s.alias: by_eid[i] for s, i in zip(self.slots, ids)}, None)
            self.rows.append(Row(ids, env, out, key, has_key))
        self.emitter.load(state["emitter"])
        self.emitted = state["emitted"]
        self.done = state["done"]


def _copy(value: Any) -> Any:
    """A deep copy of maps and arrays (emitted rows must not share state with cached rows)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
