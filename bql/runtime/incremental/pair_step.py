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
   ``DeltaEmitter`` — ``_project``'s tail; ISTREAM's common change (no NaN row, no two changed rows
   with one key) inline, emitting the added rows.

``advance_rows`` answers the output maps (``process_batch``); ``advance`` stamps them as output tuples.
The common step runs inline: a count window's overflow, an int or string key of a plain-field side
(``JoinPlan.add``'s bucket and facts), the leaving entries' ``JoinPlan.remove`` and
``Relation.drop_entry``, ``Relation.add_projected``; any other key goes through ``JoinPlan.add``.

The state is the general path's, so snapshots and the two paths mix freely.
"""
from __future__ import annotations

from typing import Any

from ...ast import KeyStep
from ...eval import Env
from ..kernel import _copy, truth
from ..processor import Tuple, stamped
from ..stage_codegen import FALLBACK, generate_pair
from ..windows import Entry
from .emitter import KeyClass, row_key_for
from .field_access import MISSING
from .join import EntryFacts
from .join_keys import _EXACT, NO_MATCH
from .relation import Row, emitted_copy

_IRREGULAR = object()  # ``PairedStep._index_add``: the new entry is irregular (the full product runs)


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
    project = generate_pair(projections, proc.aliases, _copy)
    if project is None:
        return None
    return PairedStep(proc, project, [label for label, _ in projections])


class PairedStep:
    """The join step of one statement (the state stays on the processor, whose ``restore`` replaces
    windows, index and relation; ``advance`` reads them at every call)."""

    __slots__ = ("istream", "link_pos", "other_bucket", "own_bucket", "proc", "project", "row_key", "side_key")

    def __init__(self, proc: Any, project: Any, labels: list[str]):
        self.proc = proc
        self.project = project
        self.row_key = row_key_for(list(dict.fromkeys(labels)))
        join = proc.join
        # per FROM item k: the equality linking it to the other one — its bucket of k's entries, the other
        # item's bucket, the key's place among k's keys — and the field of k's plain-field side
        links = [join.links[k][1 - k] for k in (0, 1)]
        self.link_pos = [pos for _, _, pos in links]
        self.other_bucket = [(e, 1 - k) for k, (e, _, _) in enumerate(links)]
        self.own_bucket = [(e, k) for k, (e, _, _) in enumerate(links)]
        self.side_key = list(join.side_key)
        self.istream = proc.delta is not None and proc.delta.kind == "istream"

    def advance(self, tup: Tuple, k: int) -> list[Tuple]:
        """``_advance`` + ``_project`` for a tuple of FROM item ``k`` (its only FROM item); the output
        tuples, or raises as the general path does."""
        return stamped(self.advance_rows(tup, k), tup)

    def advance_rows(self, tup: Tuple, k: int) -> list[dict]:
        """``advance`` answering the output maps (each its own copy) instead of output ``Tuple``s: the
        common step inline (a count window, an int or string key of a plain-field side, the candidates'
        rows projected, ISTREAM's distinct changes), the rest through the general parts."""
        proc = self.proc
        slots, index, relation = proc.slots, proc.index, proc.relation
        eid = proc.next_eid
        proc.next_eid = eid + 1
        entry = Entry(eid, tup)
        window = slots[k].window
        if window.span is None:  # ``OrderedWindow.add`` of a count window inline
            entries = window.entries
            entries.append(entry)
            left = [(k, entries.popleft())] if len(entries) > window.size else None
        else:
            popped = window.add(entry)
            left = [(k, e) for e in popped] if popped else None
        # ``JoinPlan.add``: an int or string value of a plain-field side inline
        name = self.side_key[k]
        d = tup.data
        v = d.get(name, MISSING) if name is not None and type(d) is dict else MISSING
        t = type(v)
        if t is int and -_EXACT <= v <= _EXACT:
            key: Any = float(v)
        elif t is str:
            key = ("s", v)
        else:
            key = None
        if key is not None:
            bucket = index.buckets[self.own_bucket[k]]
            same = bucket.get(key)
            if same is None:
                bucket[key] = {eid: entry}
            else:
                same[eid] = entry
            index.facts[eid] = EntryFacts((key,), False)
        else:
            proc.join.add(index, k, entry)
            facts = index.facts[eid]
            key = _IRREGULAR if facts.irregular else facts.keys[self.link_pos[k]]
        if proc.timed:
            for slot in slots:
                if slot.window.span is not None:
                    pruned = slot.window.prune(tup.ts)
                    if pruned:
                        left = (left or []) + [(slot.index, e) for e in pruned]
        if left is not None:
            self._leave(index, relation, left)
        if key is _IRREGULAR or index.irregular[1 - k]:
            for ids, env in proc.join._product({k: entry}):
                relation.add(ids, env)
        elif key is not NO_MATCH:
            self._add_pairs(tup, k, eid, key)
        if relation.pending:
            return [t.data for t in proc._project(tup)]
        delta = proc.delta
        if delta is None:
            return [emitted_copy(row.data) for row in relation.rows.values()]
        removed, added = relation.take_changes()
        if self.istream and not delta.nans.pos:
            out = _istream_distinct(delta.classes, removed, added)
            if out is not None:
                return out
        items = delta.apply_one(removed, added[0]) if len(added) == 1 else delta.apply(removed, added)
        return [emitted_copy(item.data) for item in items]

    def _leave(self, index: Any, relation: Any, left: list[tuple[int, Entry]]) -> None:
        """``JoinPlan.remove`` and ``Relation.drop_entry`` of each entry that left, inline."""
        sides = self.proc.join.sides
        facts_of, buckets = index.facts, index.buckets
        rows, by_eid, track = relation.rows, relation.by_eid, relation.track
        for s, old in left:
            oeid = old.eid
            facts = facts_of.pop(oeid)
            for (e, _), key in zip(sides[s], facts.keys):
                if key is not NO_MATCH:
                    bucket = buckets[(e, s)]
                    same = bucket[key]
                    del same[oeid]
                    if not same:
                        del bucket[key]
            if facts.irregular:
                index.irregular[s] -= 1
            rows_of = by_eid.pop(oeid, ())
            for row in (rows_of,) if type(rows_of) is Row else rows_of:
                if rows.pop(row.pos, None) is not None and track and row.emitted:
                    relation.removed.append(row)

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
        rows, by_eid = relation.rows, relation.by_eid
        log = relation.added if relation.track else None
        for other in others:
            oeid = other.eid
            if k == 0:
                ids, data = (eid, oeid), project(mine, other.tuple.data)
            else:
                ids, data = (oeid, eid), project(other.tuple.data, mine)
            if data is FALLBACK:
                relation.add(ids, Env({a0: tup, a1: other.tuple} if k == 0 else {a0: other.tuple, a1: tup}))
                continue
            pos = relation.next_pos  # ``Relation.add_projected`` inline
            relation.next_pos = pos + 1
            row = Row(pos, ids, None)
            row.data = data
            rows[pos] = row
            for x in ids:
                same = by_eid.get(x)
                if same is None:
                    by_eid[x] = row
                elif type(same) is list:
                    same.append(row)
                else:
                    by_eid[x] = [same, row]
            if log is not None:
                log.append(row)
            if keyed:
                row.ekey, row.nan = row_key(data)


def _istream_distinct(classes: dict[Any, Any], removed: list[Row], added: list[Row]) -> list[dict] | None:
    """ISTREAM's ``DeltaEmitter._distinct_changes`` inline (no NaN row, no two changed rows with one key):
    the removed rows leave their keys' classes, the added ones join theirs and — each the last of its class,
    being the newest row — are emitted in position order. None (nothing changed) otherwise."""
    keys = set()
    for row in removed:
        if row.nan:
            return None
        keys.add(row.ekey)
    for row in added:
        if row.nan:
            return None
        keys.add(row.ekey)
    if len(keys) != len(removed) + len(added):
        return None
    for gone in removed:
        key = gone.ekey
        cls = classes[key]
        if type(cls) is not KeyClass:  # the key's one item: ``gone`` itself
            del classes[key]
        else:
            cls.remove(gone)
            if not cls.pos:
                del classes[key]
    for new in added:
        key = new.ekey
        cls = classes.get(key)
        if cls is None:
            classes[key] = new
        else:
            if type(cls) is not KeyClass:
                cls = classes[key] = KeyClass.of(cls)
            cls.insert(new)
    return [emitted_copy(row.data) for row in added]
