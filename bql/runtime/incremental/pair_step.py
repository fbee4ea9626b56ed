"""One step of a hash join of two FROM items without grouping, in one function with generated projection.

``IncrementalSelectProcessor`` runs a join step through ``_step`` → ``_advance`` → ``JoinPlan.combos`` →
``_pair`` → ``Relation.add`` (each new combination pending with its ``Env``) → ``_project`` (the select
list's closures, then ``row_key``). For a statement whose two FROM items are hash-joined
(``JoinPlan.hashed``), without GROUP BY, LIMIT or UDSF, whose select list is in ``stage_codegen``'s subset
(``generate_pair``: plain fields of either alias and literals, each under one top-level key),
``PairedStep.advance`` does the same work on the same data in one function:

1. the new entry joins its window and the join index (``JoinPlan.add``); the entries that leave (count
   window overflow, time pruning of both windows) leave the index and take their rows out of the
   relation — exactly ``_advance``'s order;
2. while neither the new entry nor any entry of the other window is irregular, the candidates are the
   other window's bucket of the new entry's key (``_pair``): WHERE is checked on each (unless the key
   decides it, ``JoinPlan.key_decides``) *before* any row is added, as ``combos`` returns the whole list
   first, so a WHERE that raises leaves the relation as the general path does; otherwise
   ``JoinPlan._product`` enumerates like the reference;
3. each new combination's row is projected by the generated function (no side effects, ``FALLBACK``
   for any value outside its guards) and enters the relation with its data and multiset key; a row the
   function hands back enters pending with its ``Env``, and ``_project`` — the general tail — evaluates
   the pending rows in order (the first that raises drops the step, the rest stay pending) and emits.
   Projections are deterministic (``eligibility``), so computing a row's projection ahead of an earlier
   pending row that raises changes nothing but when it is computed;
4. without pending rows: RSTREAM lists the relation, ISTREAM/DSTREAM apply the change log to
   ``DeltaEmitter`` — ``_project``'s tail.

``advance_rows`` answers the output maps (``process_batch``); ``advance`` stamps them as output tuples.
For two count windows joined by one equality of a plain field of each FROM item (``JoinPlan.key_decides``,
the common join), ``advance_rows`` is ``advance_rows_plain``: the same steps with the index's and the
entry's updates written inline (``JoinPlan.add`` / ``remove``, ``Relation.drop_entry``).

The state is the general path's, so snapshots and the two paths mix freely.
"""
from __future__ import annotations

from typing import Any

from ...ast import KeyStep
from ...eval import Env
from ..kernel import _copy, truth
from ..processor import Tuple, stamped
from ..stage_codegen import FALLBACK, generate_pair, leaf_scope
from ..windows import Entry
from .emitter import row_key_for
from .field_access import MISSING
from .join import EntryFacts
from .join_keys import _EXACT, NO_MATCH, join_key
from .pair_batch import light_pairs
from .relation import Row, emitted


def paired_step(proc: Any) -> PairedStep | None:
    """The fused join step of an ``IncrementalSelectProcessor``, or None (see the module doc)."""
    if (len(proc.slots) != 2 or not proc.join.hashed or proc.groups is not None or proc.limit is not None
            or proc.has_udsf or proc.select_list is None or proc.select_list.wild):
        return None
    exprs = [p.expr for p in proc.select.projections]
    if len(exprs) != len(proc.select_list.explicit):
        return None
    projections = []
    for (steps, _fn), expr in zip(proc.select_list.explicit, exprs):
        if len(steps) != 1 or type(steps[0]) is not KeyStep:
            return None
        projections.append((steps[0].key, expr))
    project = generate_pair(projections, proc.aliases, _copy, leaf_scope(proc))
    if project is None:
        return None
    return PairedStep(proc, project, [label for label, _ in projections])


class PairedStep:
    """The join step of one statement (the state stays on the processor, whose ``restore`` replaces
    windows, index and relation; ``advance`` reads them at every call)."""

    __slots__ = ("advance_rows", "key_names", "light", "link_pos", "other_bucket", "plain", "proc", "project",
                 "row_key")

    def __init__(self, proc: Any, project: Any, labels: list[str]):
        self.proc = proc
        self.project = project
        self.row_key = row_key_for(list(dict.fromkeys(labels)))
        join = proc.join
        # per FROM item k: the equality linking it to the other one — the other item's bucket of it and the
        # key's place among k's keys
        links = [join.links[k][1 - k] for k in (0, 1)]
        self.link_pos = [pos for _, _, pos in links]
        self.other_bucket = [(e, 1 - k) for k, (e, _, _) in enumerate(links)]
        # ``advance_rows_plain`` covers the statement: two count windows, WHERE one equality of a plain
        # field of each FROM item (``JoinPlan.key_decides``, ``side_key``), not timed
        self.key_names = list(join.side_key)
        self.plain = (join.key_decides and not proc.timed and None not in self.key_names
                      and all(slot.window.span is None for slot in proc.slots))
        self.advance_rows: Any = self.advance_rows_plain if self.plain else self.advance_rows_general
        # an ISTREAM join's long run of one input in one loop over light state (``pair_batch``)
        self.light = light_pairs(proc, self)

    def advance(self, tup: Tuple, k: int) -> list[Tuple]:
        """``_advance`` + ``_project`` for a tuple of FROM item ``k`` (its only FROM item); the output
        tuples, or raises as the general path does."""
        return stamped(self.advance_rows(tup, k), tup)

    def advance_rows_general(self, tup: Tuple, k: int) -> list[dict]:
        """``advance`` answering the output maps (``relation.emitted``) instead of output ``Tuple``s."""
        proc = self.proc
        slots, index, relation = proc.slots, proc.index, proc.relation
        eid = proc.next_eid
        proc.next_eid = eid + 1
        entry = Entry(eid, tup)
        window = slots[k].window
        if window.span is None:  # ``OrderedWindow.add`` of a count window inline
            entries = window.entries
            entries.append(entry)
            left = [(k, entries.popleft())] if len(entries) > window.size else []
        else:
            left = [(k, e) for e in window.add(entry)]
        join = proc.join
        join.add(index, k, entry)
        if proc.timed:
            for slot in slots:
                if slot.window.span is not None:
                    left.extend((slot.index, e) for e in slot.window.prune(tup.ts))
        for s, old in left:
            join.remove(index, s, old)
            relation.drop_entry(old.eid)
        facts = index.facts[eid]
        if facts.irregular or index.irregular[1 - k]:
            for ids, env in join._product({k: entry}):
                relation.add(ids, env)
        else:
            key = facts.keys[self.link_pos[k]]
            if key is not NO_MATCH:
                self._add_pairs(tup, k, eid, key)
        return self._emitted(tup)

    def advance_rows_plain(self, tup: Tuple, k: int) -> list[dict]:
        """``advance_rows_general`` of a ``plain`` statement with ``JoinPlan.add`` / ``remove`` and
        ``Relation.drop_entry`` inline (the same changes in the same order on the same state)."""
        proc = self.proc
        index, relation = proc.index, proc.relation
        eid = proc.next_eid
        proc.next_eid = eid + 1
        entry = Entry(eid, tup)
        window = proc.slots[k].window
        entries = window.entries
        entries.append(entry)
        # ``JoinPlan.add`` of a plain-field side
        data = tup.data
        value = data.get(self.key_names[k], MISSING) if type(data) is dict else MISSING
        irregular = False
        t = type(value)
        if t is str:
            key: Any = ("s", value)
        elif t is int and -_EXACT <= value <= _EXACT:
            key = float(value)
        elif value is MISSING:
            irregular, key = True, NO_MATCH
        else:
            try:
                key = join_key(value)
            except Exception:
                irregular, key = True, NO_MATCH
        buckets = index.buckets
        if key is not NO_MATCH:
            bucket = buckets[self.other_bucket[1 - k]]
            same = bucket.get(key)
            if same is None:
                bucket[key] = {eid: entry}
            else:
                same[eid] = entry
        facts = index.facts
        facts[eid] = EntryFacts((key,), irregular)
        irregulars = index.irregular
        if irregular:
            irregulars[k] += 1
        rows, by_eid, track = relation.rows, relation.by_eid, relation.track
        if len(entries) > window.size:  # the oldest entry leaves: index, then its rows
            old = entries.popleft()
            oid = old.eid
            gone = facts.pop(oid)
            okey = gone.keys[0]
            if okey is not NO_MATCH:
                bucket = buckets[self.other_bucket[1 - k]]
                same = bucket[okey]
                del same[oid]
                if not same:
                    del bucket[okey]
            if gone.irregular:
                irregulars[k] -= 1
            rows_of = by_eid.pop(oid, ())
            for row in rows_of if type(rows_of) is not Row else (rows_of,):
                if rows.pop(row.pos, None) is not None and track and row.emitted:
                    relation.removed.append(row)
        if irregular or irregulars[1 - k]:
            for ids, env in proc.join._product({k: entry}):
                relation.add(ids, env)
        elif key is not NO_MATCH:
            self._add_pairs(tup, k, eid, key)
        return self._emitted(tup)

    def _emitted(self, tup: Tuple) -> list[dict]:
        """The step's output maps once its rows are in the relation (``_project``'s tail)."""
        proc = self.proc
        relation = proc.relation
        if relation.pending:
            return [t.data for t in proc._project(tup)]
        delta = proc.delta
        if delta is None:
            return [emitted(row.data) for row in relation.rows.values()]
        removed, added = relation.take_changes()
        items = delta.apply_one(removed, added[0]) if len(added) == 1 else delta.apply(removed, added)
        return [emitted(item.data) for item in items]

    def _add_pairs(self, tup: Tuple, k: int, eid: int, key: Any) -> None:
        """``JoinPlan._pair`` and ``Relation.add`` with the generated projection (see module doc, 2–3)."""
        proc = self.proc
        join, relation = proc.join, proc.relation
        bucket = proc.index.buckets[self.other_bucket[k]].get(key)
        if not bucket:
            return
        a0, a1 = proc.aliases
        mine = tup.data
        if join.key_decides:
            others = list(bucket.values())
        else:  # WHERE on every candidate before any row is added (a raise adds none)
            where = join.where
            others = [o for o in bucket.values()
                      if truth(where(Env({a0: tup, a1: o.tuple} if k == 0 else {a0: o.tuple, a1: tup})),
                               "WHERE")]
        project, keyed = self.project, proc.delta is not None
        row_key = self.row_key
        for other in others:
            if k == 0:
                ids, data = (eid, other.eid), project(mine, other.tuple.data)
            else:
                ids, data = (other.eid, eid), project(other.tuple.data, mine)
            if data is FALLBACK:
                relation.add(ids, Env({a0: tup, a1: other.tuple} if k == 0 else {a0: other.tuple, a1: tup}))
                continue
            row = relation.add_projected(ids, data)
            if keyed:
                row.ekey, row.nan = row_key(data)

