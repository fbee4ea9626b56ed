"""``IncrementalSelectProcessor``: the BQL SELECT kernel with per-step cost proportional to the change.

It is a ``SelectProcessor`` (same construction, same ``process`` / ``tick`` / UDSF handling, same
attributes the planner reads) whose step works on changes instead of whole relations:

1. *windows* — ``OrderedWindow`` prunes time windows from the head (``ordered_window.py``);
2. *relation* — the rows containing a pruned entry leave through an entry → rows index; the new
   combinations come from ``JoinPlan`` (hash join on WHERE's equalities, ``join.py``);
3. *relation-to-relation* — projections computed once per row (``relation.pending``), or the touched
   groups re-evaluated with incremental aggregate states (``groups.py``);
4. *relation-to-stream* — RSTREAM lists the current rows; ISTREAM/DSTREAM apply the change since the
   last successful step to ``DeltaEmitter`` (``emitter.py``).

Generated code (``runtime/stage_codegen.py``, also the stateless Spark tier's generator): the
reference's fast form (RSTREAM over ``[RANGE 1 TUPLES]``) runs WHERE and the select list as one
type-guarded function (``generated``) and takes the reference's fast path only for rows outside its
guards; a one-FROM-item statement without grouping decides each new row's WHERE and projection the same
way (``row_step``) and, without LIMIT, ``process`` runs that row's whole step in ``_advance_generated``.
The generated code has no side effects and returns ``FALLBACK`` for any value it was not written for
(NULL, MISSING, a mixed-type comparison ...), so those rows take the compiled closures: same values,
same errors.

Failures follow the reference exactly: windows and the relation change, the step is reported as
``Dropped`` with the reference's error text, and the emitter keeps the last successful relation (the
change log and the touched groups carry over to the next step). ``build_processor`` chooses this
kernel only for statements ``eligibility.ineligible_reason`` accepts. A run of one input's tuples in one
call (``process_batch``) is ``batches.BatchSteps``'s.
"""
from __future__ import annotations

import pickle

from ...ast import Select
from ...eval import Env
from ..batch_codegen import generate_batch
from ..kernel import SelectProcessor, _copy, _message, truth
from ..processor import NOTHING, Dropped, ProcessorContext, StepResult, Tuple
from ..stage_codegen import FALLBACK, fast_parts, generate, generate_for, leaf_scope, row_parts
from ..windows import Entry
from .batches import BatchSteps
from .delta_step import delta_step
from .emitter import DeltaEmitter, row_key, row_key_for
from .group_step import grouped_step
from .groups import GroupTable, IncrementalGrouping
from .join import JoinPlan
from .ordered_window import OrderedWindow
from .pair_step import paired_step
from .plain_select import plain_evaluator
from .relation import Relation, emitted

SNAPSHOT_KIND = "incremental-select/1"



class IncrementalSelectProcessor(BatchSteps, SelectProcessor):
    """The incremental per-tuple kernel of one ``SELECT ISTREAM|RSTREAM|DSTREAM ... FROM ... [RANGE ...]``."""

    def __init__(self, select: Select, context: ProcessorContext | None = None):
        super().__init__(select, context)
        registry = self.context.functions
        for slot, item in zip(self.slots, select.from_items):
            slot.window = OrderedWindow(item.window)
        self.join = JoinPlan(select.where, self.where, self.slots, registry)
        self.delta = DeltaEmitter(self.emitter.kind) if self.emitter.kind != "rstream" else None
        self.groups = (IncrementalGrouping(self.grouping, self.aliases, registry, self.delta is not None,
                                           select)
                       if self.grouping is not None else None)
        self.index = self.join.new_index()
        self.relation = Relation(track=self.delta is not None and self.grouping is None)
        self.table = GroupTable()
        self.timed = any(s.window.span is not None for s in self.slots)
        self.has_udsf = any(s.udsf is not None for s in self.slots)
        self.single = len(self.slots) == 1
        self.project_row = (plain_evaluator(self.select_list, select.projections, self.aliases)
                            if self.select_list is not None else None)
        self.delegate = self.fast  # run as the reference kernel (fast path, or restored from its snapshot)
        # the fast form's generated, type-guarded step (``stage_codegen``); other rows take the reference
        leaves = leaf_scope(self)  # expressions outside the generated subset: their closures, as leaves
        self.generated = (generate_for(self, _copy, leaves) if self.fast and self.limit is None
                          and not self.has_udsf else None)
        # the same over a batch, one list comprehension (``batch_codegen``; ``process_batch``)
        self.batch = generate_batch(*fast_parts(self), leaves=leaves) if self.generated is not None else None
        # one FROM item, no grouping: WHERE and the select list of a new row as one generated step
        parts = row_parts(self) if self.single and self.grouping is None and not self.fast else None
        self.row_step = generate(*parts, leaves=leaves) if parts is not None else None
        self.row_key = (row_key_for(list(dict.fromkeys(label for label, _ in parts[1])))
                        if self.row_step is not None else row_key)
        # without LIMIT or a UDSF, ``process`` runs a generated row's whole step itself (``_advance_generated``)
        self.fused = self.row_step is not None and self.limit is None and not self.has_udsf
        # one FROM item, RSTREAM GROUP BY: the whole step in one function (``group_step``)
        self.grouped = grouped_step(self)
        # two hash-joined FROM items without grouping: the step with a generated projection (``pair_step``)
        self.paired = paired_step(self)
        # one FROM item, ISTREAM/DSTREAM without grouping: the common step in one function (``delta_step``)
        self.delta_step = delta_step(self)
        if self.generated is not None or self.fused or self.grouped is not None:
            self.source = self.slots[0].sources[0]
        self.targets: dict[str, list[int]] = {}
        for slot in self.slots:
            for name in slot.sources:
                self.targets.setdefault(name, []).append(slot.index)

    def process(self, tup: Tuple) -> StepResult:
        """``SelectProcessor.process`` with the FROM items of each input looked up once; the fast form
        runs its generated step first (``None``: WHERE is false; ``FALLBACK``: the reference's step); a
        one-FROM-item RSTREAM GROUP BY runs its generated step (``group_step``) unless a row waits for its
        key, a hash join of two FROM items its step with a generated projection (``pair_step``) unless a
        row waits for its projection. A step that emits and drops nothing returns the shared ``NOTHING``."""
        generated = self.generated
        if generated is not None:
            if tup.input != self.source:
                return NOTHING
            out = generated(tup.data)
            if out is None:
                return NOTHING
            if out is not FALLBACK:
                return StepResult([Tuple(out, tup.ts, tup.seq, "")])
            result = StepResult()
            super()._step(tup, [0], result)
            return result
        stepper = self.delta_step
        if stepper is not None and self.fused and not self.delegate:
            if tup.input != self.source:
                return NOTHING
            outputs = stepper.advance(tup)
            if outputs is not None:
                self.emitted += len(outputs)
                return StepResult(outputs) if outputs else NOTHING
        if self.fused and not self.delegate and not self.relation.pending:
            if tup.input != self.source:
                return NOTHING
            data = self.row_step(tup.data)  # side-effect free: a FALLBACK leaves nothing to undo
            if data is not FALLBACK:
                try:
                    outputs = self._advance_generated(tup, data)
                except Exception as err:  # as ``_step``: only this step is lost
                    return StepResult([], [Dropped(tup, _message(err), "other")])
                self.emitted += len(outputs)
                return StepResult(outputs) if outputs else NOTHING
        grouped = self.grouped
        if grouped is not None and not self.delegate and not self.relation.pending:
            if tup.input != self.source:
                return NOTHING
            try:
                outputs = grouped.advance(tup)
            except Exception as err:  # as ``_step``: only this step is lost
                return StepResult([], [Dropped(tup, _message(err), "other")])
            self.emitted += len(outputs)
            return StepResult(outputs) if outputs else NOTHING
        paired = self.paired
        if paired is not None and not self.delegate and not self.relation.pending:
            targets = self.targets.get(tup.input)
            if targets is not None and len(targets) == 1:
                try:
                    outputs = paired.advance(tup, targets[0])
                except Exception as err:  # as ``_step``: only this step is lost
                    return StepResult([], [Dropped(tup, _message(err), "other")])
                self.emitted += len(outputs)
                return StepResult(outputs) if outputs else NOTHING
        if self.has_udsf:
            return super().process(tup)
        result = StepResult()
        if self.done:
            result.done = True
            return result
        targets = self.targets.get(tup.input)
        if targets:
            self._step(tup, targets, result)
        result.done = self.done
        return result

    def kernel_description(self) -> str:
        """A short account of how this statement runs (for EXPLAIN)."""
        if self.generated is not None:
            return ("generated type-guarded code (RSTREAM over [RANGE 1 TUPLES]; a batch as one list"
                    " comprehension; the reference fast path for rows outside its guards)")
        if self.fast:
            return "reference fast path (RSTREAM over [RANGE 1 TUPLES])"
        if self.delegate:
            return "reference (restored from a snapshot of the reference kernel)"
        parts = []
        if len(self.slots) > 1:
            if self.join.hashed:
                on = " and ".join(self.join.equalities)
                parts.append(f"hash join on {on}")
            else:
                parts.append("cross product of the windows")
        if any(s.window.span is not None for s in self.slots):
            parts.append("head-pruned time windows")
        if self.groups is not None:
            parts.append(self.groups.describe())
        if self.grouped is not None:
            light = ", a long batch in one loop over light state" if self.grouped.light is not None else ""
            parts.append("one generated step per tuple, a batch answering output maps" + light)
        if self.paired is not None:
            light = (", a long run of one input in one loop over light state" if self.paired.light is not None
                     else "")
            parts.append("generated pair projection, a batch answering output maps" + light)
        if self.delta_step is not None:
            parts.append("one fused step per tuple, a batch answering output maps")
        parts.append(f"{self.emitter.kind.upper()} from the relation's changes"
                     if self.delta is not None else "RSTREAM of the cached rows")
        return f"incremental ({', '.join(parts)})"

    # ------------------------------------------------------------ one step

    def _step(self, tup: Tuple, targets: list[int], result: StepResult) -> None:
        if self.delegate:
            super()._step(tup, targets, result)
            return
        try:
            outputs = self._advance(tup, targets)
        except Exception as err:  # per-tuple isolation: only this step is lost
            result.dropped.append(Dropped(tup, _message(err), "other"))
            return
        limit = self.limit
        if limit is not None:
            outputs = outputs[:max(0, limit - self.emitted)]
        result.outputs += outputs
        self.emitted += len(outputs)
        if limit is not None and self.emitted >= limit:
            self.done = True

    def _advance(self, tup: Tuple, targets: list[int]) -> list[Tuple]:
        """Update windows and relation for ``tup``; the tuples to emit, each carrying its row (``emitted``),
        stamped with ``tup``'s time and sequence number (raises when the step fails)."""
        if self.single:
            return self._advance_single(tup)
        slots, join, index, relation = self.slots, self.join, self.index, self.relation
        new: dict[int, Entry] = {}
        left: list[tuple[int, Entry]] = []
        hashed = join.hashed
        for k in targets:
            entry = Entry(self.next_eid, tup)
            self.next_eid += 1
            new[k] = entry
            popped = slots[k].window.add(entry)
            if hashed:
                join.add(index, k, entry)
            if popped:
                left += [(k, e) for e in popped]
        if self.timed:
            for slot in slots:
                if slot.window.span is not None:
                    left.extend((slot.index, e) for e in slot.window.prune(tup.ts))
        groups = self.groups
        for k, entry in left:
            if hashed:
                join.remove(index, k, entry)
            for row in relation.drop_entry(entry.eid):
                if groups is not None and row.gkey is not None:
                    groups.remove_row(self.table, row)
        for ids, env in join.combos(index, new):
            relation.add(ids, env)
        if groups is None:
            return self._project(tup)
        return self._group(tup)

    def _advance_single(self, tup: Tuple) -> list[Tuple]:
        """``_advance`` for one FROM item: one new entry, one candidate row."""
        window, relation, groups = self.slots[0].window, self.relation, self.groups
        row_step = self.row_step
        if row_step is not None and not relation.pending:
            data = row_step(tup.data)  # side-effect free: a FALLBACK leaves nothing to undo
            if data is not FALLBACK:
                return self._advance_generated(tup, data)
        entry = Entry(self.next_eid, tup)
        self.next_eid += 1
        left = window.add(entry)
        if self.timed:
            left += window.prune(tup.ts)
        for old in left:
            gone = relation.drop_entry(old.eid)
            if groups is not None:
                for row in gone:
                    if row.gkey is not None:
                        groups.remove_row(self.table, row)
        env = Env({self.aliases[0]: tup})
        where = self.where
        if where is None or truth(where(env), "WHERE"):
            relation.add((entry.eid,), env)
        if groups is None:
            return self._project(tup)
        return self._group(tup)

    def _advance_generated(self, tup: Tuple, data: dict | None) -> list[Tuple]:
        """``_advance_single`` when the generated row step decided the new row: ``data`` is its
        projection, or None when WHERE is false (no earlier row waits for its projection)."""
        window, relation, delta = self.slots[0].window, self.relation, self.delta
        eid = self.next_eid
        self.next_eid = eid + 1
        left = window.add(Entry(eid, tup))
        if self.timed:
            left += window.prune(tup.ts)
        row = relation.shift(left, eid, data)
        if row is not None and delta is not None:
            row.ekey, row.nan = self.row_key(data)
        ts, seq = tup.ts, tup.seq
        if delta is None:
            return [Tuple(emitted(row.data), ts, seq, "") for row in relation.rows.values()]
        removed, added = relation.take_changes()
        items = delta.apply_one(removed, added[0]) if len(added) == 1 else delta.apply(removed, added)
        return [Tuple(emitted(item.data), ts, seq, "") for item in items]

    def _project(self, tup: Tuple) -> list[Tuple]:
        relation = self.relation
        pending = relation.take_pending()
        evaluate = self.project_row
        keyed = self.delta is not None
        for i, row in enumerate(pending):
            try:
                data = row.data = evaluate(row.env)
            except Exception:
                relation.pending = pending[i:]  # the reference re-evaluates them next step
                raise
            row.env = None  # read only for the projection (fewer objects for the garbage collector)
            if keyed:
                row.ekey, row.nan = row_key(data)
        ts, seq = tup.ts, tup.seq
        if self.delta is None:
            return [Tuple(emitted(row.data), ts, seq, "") for row in relation.rows.values()]
        removed, added = relation.take_changes()
        return [Tuple(emitted(item.data), ts, seq, "") for item in self.delta.apply(removed, added)]

    def _group(self, tup: Tuple) -> list[Tuple]:
        if self.grouped is not None:  # the items change here: the generated step gathers its order again
            self.grouped.order.forget()
        relation = self.relation
        pending = relation.take_pending()
        groups, table = self.groups, self.table
        row_key = groups.row_key
        for i, row in enumerate(pending):
            try:
                row.gkey = row_key(row.env)
            except Exception:
                relation.pending = pending[i:]
                raise
            groups.add_row(table, row)
        removed, added = groups.evaluate(table)
        items = groups.current(table) if self.delta is None else self.delta.apply(removed, added)
        ts, seq = tup.ts, tup.seq  # a group's item knows whether its row is flat
        return [Tuple(item.data if item.flat else _copy(item.data), ts, seq, "") for item in items]

    # ------------------------------------------------------------ snapshot / restore

    def snapshot(self) -> bytes:
        if self.delegate:
            return super().snapshot()
        state = {
            "kind": SNAPSHOT_KIND,
            "next_eid": self.next_eid,
            "windows": [s.window for s in self.slots],
            "index": self.index,
            "relation": self.relation,
            "delta": self.delta,
            "table": self.table,
            "emitted": self.emitted,
            "done": self.done,
            "udsfs": [s.udsf for s in self.slots],
        }
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        """Load a snapshot; one of the reference kernel (an older checkpoint) turns this processor
        into the reference kernel for good (exact, just not incremental)."""
        state = pickle.loads(data)
        if self.delegate or state.get("kind") != SNAPSHOT_KIND:
            super().restore(data)
            self.delegate = True
            return
        self.next_eid = state["next_eid"]
        for slot, window, udsf in zip(self.slots, state["windows"], state["udsfs"]):
            slot.window = window
            slot.udsf = udsf
        self.index = state["index"]
        self.relation = state["relation"]
        self.delta = state["delta"]
        self.table = state["table"]
        if self.groups is not None:
            self.groups.adopt(self.table)
        self.emitted = state["emitted"]
        self.done = state["done"]
