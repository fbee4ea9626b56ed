"""The kernel's current relation, kept as a change log rather than rebuilt every step.

A *row* is one combination of window entries that passed WHERE (the reference's ``kernel.Row``). Rows
get increasing positions (``pos``) as they enter, and the relation is append-only at its end, so the
relation's order is the order of ``pos`` — the order ``SelectProcessor.rows`` has.

- ``pending`` holds the rows whose projection (or group key) has not been computed yet, in order. The
  reference computes them lazily in relation order and stops at the first error, leaving the rest for
  the next step; so does the kernel.
- With ``track`` (ISTREAM/DSTREAM without grouping) the relation also records what changed since the
  last successful emit: the rows added since (and still present) and the emitted rows that left.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from ...eval import Env
from ..kernel import _copy

# value types a flat row holds (``kernel._copy`` copies only maps and arrays)
_SCALARS = frozenset((int, float, str, bool, type(None), bytes, _dt.datetime))
_all_scalar = _SCALARS.issuperset


def is_flat(data: dict[str, Any]) -> bool:
    """Whether ``data`` holds no map or array (it is then emitted as itself: ``emitted``)."""
    return _all_scalar(map(type, data.values()))


def emitted_copy(data: dict[str, Any]) -> dict[str, Any]:
    """``kernel._copy(data)``, by ``dict.copy`` when ``data`` is flat."""
    return data.copy() if _all_scalar(map(type, data.values())) else _copy(data)


def emitted(data: dict[str, Any]) -> dict[str, Any]:
    """The row an output tuple carries: ``data`` itself when it is flat, else ``kernel._copy(data)``.

    A flat map the kernel holds is never changed once made (a changed row is a new map), and no consumer
    changes a map it receives (the engine hands one map to every reader of a stream; ``plugins/udsf.py``
    tells plugin authors so): an emitted flat row can be the held one, emitted again by later steps
    unchanged. A map or array inside a row may be an aggregate's own state, changed by later rows: a row
    holding one is emitted as its own deep copy."""
    return data if _all_scalar(map(type, data.values())) else _copy(data)


class Row:
    """One relation row; it is also the emitter's item (``pos``, ``data``, ``ekey``, ``nan``)."""

    __slots__ = ("pos", "ids", "env", "data", "ekey", "nan", "gkey", "emitted")

    def __init__(self, pos: int, ids: tuple[int, ...], env: Env):
        self.pos = pos
        self.ids = ids
        self.env: Env | None = env  # dropped once a non-grouping row has its projection
        self.data: dict[str, Any] | None = None  # the projection (non-grouping queries)
        self.ekey: Any = None  # multiset key of ``data`` (ISTREAM/DSTREAM)
        self.nan = False  # ``data`` holds a NaN: it never equals another row
        self.gkey: Any = None  # group key (grouping queries), set once computed
        self.emitted = False  # part of the emitter's previous relation


class Relation:
    """Rows by position, the rows each entry takes part in, and the change log (plain data).

    ``pending`` and ``added`` are lists in position order that may still hold rows that have left
    the relation since (they are skipped when read): appending is cheaper than keeping them exact.
    ``by_eid`` maps an entry to its one row, or to a list of its rows when it has several (fewer
    objects for the garbage collector to walk in a large window; a snapshot may hold lists only).
    """

    __slots__ = ("rows", "by_eid", "pending", "added", "removed", "track", "next_pos")

    def __init__(self, track: bool):
        self.rows: dict[int, Row] = {}
        self.by_eid: dict[int, Row | list[Row]] = {}
        self.pending: list[Row] = []
        self.added: list[Row] = []
        self.removed: list[Row] = []
        self.track = track
        self.next_pos = 0

    def add(self, ids: tuple[int, ...], env: Env) -> Row:
        row = Row(self.next_pos, ids, env)
        self.next_pos += 1
        self.rows[row.pos] = row
        self.pending.append(row)
        by_eid = self.by_eid
        for eid in ids:
            same = by_eid.get(eid)
            if same is None:
                by_eid[eid] = row
            elif type(same) is list:
                same.append(row)
            else:
                by_eid[eid] = [same, row]
        if self.track:
            self.added.append(row)
        return row

    def shift(self, left: list[Any], eid: int, data: dict[str, Any] | None) -> Row | None:
        """One step of a one-FROM-item relation whose new row is already projected: ``drop_entry`` for
        each entry in ``left``, then (unless ``data`` is None: WHERE was false) add the row of entry
        ``eid`` with projection ``data``, not pending. Returns the new row."""
        rows, by_eid = self.rows, self.by_eid
        for entry in left:
            old = by_eid.get(entry.eid)
            if type(old) is not Row:  # none, or a list (several rows; a snapshot of an older version)
                self.drop_entry(entry.eid)
                continue
            del by_eid[entry.eid]
            if rows.pop(old.pos, None) is not None and self.track and old.emitted:
                self.removed.append(old)
        if data is None:
            return None
        row = Row(self.next_pos, (eid,), None)
        self.next_pos += 1
        row.data = data
        rows[row.pos] = row
        same = by_eid.get(eid)
        if same is None:
            by_eid[eid] = row
        elif type(same) is list:
            same.append(row)
        else:
            by_eid[eid] = [same, row]
        if self.track:
            self.added.append(row)
        return row

    def add_projected(self, ids: tuple[int, ...], data: dict[str, Any]) -> Row:
        """``add`` of a row whose projection ``data`` is already computed (not pending, no ``env``)."""
        row = Row(self.next_pos, ids, None)
        self.next_pos += 1
        row.data = data
        self.rows[row.pos] = row
        by_eid = self.by_eid
        for eid in ids:
            same = by_eid.get(eid)
            if same is None:
                by_eid[eid] = row
            elif type(same) is list:
                same.append(row)
            else:
                by_eid[eid] = [same, row]
        if self.track:
            self.added.append(row)
        return row

    def drop_entry(self, eid: int) -> list[Row]:
        """Remove the rows containing entry ``eid``; returns those that were still present."""
        gone = []
        rows = self.rows
        rows_of = self.by_eid.pop(eid, ())
        for row in rows_of if type(rows_of) is not Row else (rows_of,):
            if rows.pop(row.pos, None) is None:
                continue
            gone.append(row)
            if self.track and row.emitted:
                self.removed.append(row)
        return gone

    def take_pending(self) -> list[Row]:
        """The rows still waiting for their projection or key, in order (the list is emptied)."""
        pending, self.pending = self.pending, []
        rows = self.rows
        if len(pending) == 1:  # the common step: the new row, still present
            return pending if pending[0].pos in rows else []
        return [r for r in pending if r.pos in rows]

    def take_changes(self) -> tuple[list[Row], list[Row]]:
        """(rows of the last emitted relation that left, rows added since) — and start a new log."""
        rows = self.rows
        added = self.added
        if len(added) == 1:  # the common step
            if added[0].pos in rows:
                added[0].emitted = True
            else:
                added = []
        else:
            added = [r for r in added if r.pos in rows]
            for row in added:
                row.emitted = True
        removed = self.removed
        self.removed, self.added = [], []
        return removed, added
