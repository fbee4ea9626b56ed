"""One step of a one-FROM-item ``SELECT ISTREAM|DSTREAM ...`` (no grouping) in one function.

``IncrementalSelectProcessor`` runs such a statement's step through ``process`` → ``_advance_generated``
→ ``OrderedWindow.add`` / ``prune`` → ``Relation.shift`` → ``Relation.take_changes`` →
``DeltaEmitter.apply_one`` → ``_one_change`` → ``_remove`` / ``_insert``: eight calls of general code
(several entries leaving, change logs carried over from a failed step, NaN rows, a row leaving whose
key equals the new row's) around a few dictionary updates. ``DeltaStep.advance`` does the common step —
the generated row step decided the new row, at most one entry leaves, no log carried over, no NaN —
on the same data (window, ``Relation``, ``DeltaEmitter``) in one function:

1. the new entry joins its window; a count window drops its oldest entry past its size, a time window
   whose entries are in timestamp order drops its head entries older than ``ts - range``
   (``OrderedWindow``'s rule); anything else (an out-of-order window) goes through ``prune``;
2. the entry that left takes its row out of the relation (``Relation.shift``), the new row (unless
   WHERE was false) enters it already projected and keyed (``row_key_for``);
3. the emitter applies the change as ``DeltaEmitter._one_change`` does: ISTREAM emits the new row when
   its key's count grows, DSTREAM the last row of the key that shrank.

Whatever is outside the common step (two entries leaving, a NaN, the leaving row's key equal to the new
row's) is handed to ``DeltaEmitter.apply`` with the same removed and added rows ``take_changes`` would
give, so the result is the general path's. Nothing here raises (the row step is side-effect free and
returns ``FALLBACK`` for what it was not written for; keys and copies do not fail). The state is the
general path's, so snapshots and the two paths mix freely.
"""
from __future__ import annotations

from typing import Any

from ..processor import Tuple, stamped
from ..stage_codegen import FALLBACK
from ..windows import Entry
from .emitter import KeyClass
from .relation import Row, emitted


def delta_step(proc: Any) -> DeltaStep | None:
    """The fused ISTREAM/DSTREAM step of an ``IncrementalSelectProcessor``, or None when the statement
    is not of the shape the module doc describes."""
    if not proc.fused or proc.delta is None or proc.groups is not None:
        return None
    return DeltaStep(proc)


class DeltaStep:
    """``advance(tup)``: the outputs of ``tup``'s step, or None when the step is not the common one and
    nothing has been changed (the processor's general path then runs it); ``advance_rows(tup)``: the same
    step answering the output maps (``relation.emitted``) instead of output ``Tuple``s (``process_batch``)."""

    __slots__ = ("istream", "proc")

    def __init__(self, proc: Any):
        self.proc = proc
        self.istream = proc.delta.kind == "istream"

    def advance(self, tup: Tuple) -> list[Tuple] | None:
        rows = self.advance_rows(tup)
        return stamped(rows, tup) if rows else rows

    def advance_rows(self, tup: Tuple) -> list[dict] | None:
        proc = self.proc
        relation, delta = proc.relation, proc.delta
        if relation.pending or relation.added or relation.removed or delta.nans.pos:
            return None
        data = proc.row_step(tup.data)  # read per step, as ``_advance_single`` does
        if data is FALLBACK:
            return None
        window = proc.slots[0].window
        entries = window.entries
        eid = proc.next_eid
        proc.next_eid = eid + 1
        span = window.span
        ts = tup.ts
        if span is None:
            entries.append(Entry(eid, tup))  # a count window never holds more than its size
            left = entries.popleft() if len(entries) > window.size else None
        else:
            if entries and ts < entries[-1].tuple.ts:
                window.descents += 1
            entries.append(Entry(eid, tup))
            if window.descents:
                left = window.prune(ts)
            else:
                limit = ts - span
                if entries[0].tuple.ts >= limit:
                    left = None
                else:
                    left = entries.popleft()
                    if entries and entries[0].tuple.ts < limit:
                        left = [left]
                        while entries and entries[0].tuple.ts < limit:
                            left.append(entries.popleft())
        rows, by_eid = relation.rows, relation.by_eid
        removed: list[Row] = []
        if left is not None:
            for old_entry in (left,) if type(left) is Entry else left:
                old = by_eid.get(old_entry.eid)
                if type(old) is not Row:  # none, or a list (several rows; an older snapshot)
                    relation.drop_entry(old_entry.eid)  # logs the emitted rows that left
                    removed += relation.removed
                    relation.removed = []
                    continue
                del by_eid[old_entry.eid]
                if rows.pop(old.pos, None) is not None and old.emitted:
                    removed.append(old)
        new = None
        if data is not None:
            new = Row(relation.next_pos, (eid,), None)
            relation.next_pos += 1
            new.data = data
            rows[new.pos] = new
            by_eid[eid] = new
            new.ekey, new.nan = proc.row_key(data)
            new.emitted = True
        istream = self.istream
        classes = delta.classes
        if new is None:
            if not removed:
                return []
            general = len(removed) > 1 or removed[0].nan
        else:
            general = (new.nan or len(removed) > 1
                       or (removed and (removed[0].nan or removed[0].ekey == new.ekey)))
        if general:  # ``_one_change`` would refuse it too
            items = delta.apply(removed, [] if new is None else [new])
            return [emitted(item.data) for item in items]
        out = []
        if removed:  # ``DeltaEmitter._remove``: DSTREAM emits the last row of the key that shrank
            gone = removed[0]
            key = gone.ekey
            cls = classes[key]
            if type(cls) is not KeyClass:
                del classes[key]
                if not istream:
                    out.append(emitted(cls.data))
            else:
                if not istream:
                    out.append(emitted(cls.items[-1].data))
                cls.remove(gone)
                if not cls.pos:
                    del classes[key]
        if new is None:
            return out
        key = new.ekey
        cls = classes.get(key)
        if cls is None:
            classes[key] = new
        else:
            if type(cls) is not KeyClass:
                cls = classes[key] = KeyClass.of(cls)
            cls.insert(new)
        if istream:
            out.append(emitted(data))
        return out
