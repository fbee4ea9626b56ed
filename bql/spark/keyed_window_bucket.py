"""One bucket of a keyed Timeplus window stage: the panes of its keys, one call per micro-batch (Spark-free).

The router (``keyed_window_route``) has already decided everything order-dependent, so a bucket only
keeps, per open window, the groups of its keys (the kernel's pane: a ``ColumnPane`` of aggregate columns
where the kernel keeps those, else a ``Pane`` of tagged rows; groups in first-appearance order) and does
what it is told, in ``(seq, idx)`` order:

- ``tuple``: add the tuple, tagged, to each window listed in ``event`` (the windows whose row passed
  WHERE; the group key is computed again, it cannot fail: the router computed it);
- ``close``: emit the window's groups (``Grouping.evaluate``, HAVING applied; a failing group is a
  ``dropped`` row of event ``output``, as in the kernel) — dropped rows at the close row's ``(seq, idx)``,
  output rows at ``(seq, event)`` — with ``sub = first seq of the group << 16 | row``: every bucket
  holding the window gets the same positions, so sorting by ``(seq, idx, sub)`` gives the kernel's order
  (a step's dropped rows, then its outputs; windows by start, groups by first appearance); then forget
  the window;
- other rows (dropped, end, ...) pass through.

State: a map from the window's start (text) to the pickled pane (a micro-batch writes the windows it
touched and removes the ones it closed) and a stamp; a worker keeps the panes it holds and uses them
while the stored stamp is the one it wrote (the rule of ``keyed_buckets.BucketCore``).
"""
from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterable
from typing import Any

import orjson
from sbpy.bql.eval import Env
from sbpy.bql.runtime import gc_pause
from sbpy.bql.runtime.kernel import _copy, _message
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.timeplus.pane_columns import ColumnPane, load_pane
from sbpy.bql.runtime.timeplus.panes import Pane, tag
from sbpy.bql.runtime.timeplus.timecol import utc_now

from . import journal_format as jf
from .journal_values import Timestamps
from .keyed_plan import KeyedPlan
from .operator import _error_text, build_stage

SUB_BITS = 16  # rows of one group (a group emits one row; more raise rather than mis-order)


class WindowBucket:
    """The open windows of one bucket's keys on one worker, and the stamp they correspond to."""

    def __init__(self, plan: KeyedPlan, topology: str = ""):
        self.proc = build_stage(plan.keyed, topology)
        self.node = plan.keyed.node
        self.route = plan.route
        self.out_kind = "out" if plan.keyed_is_final else "tuple"
        self.size = self.proc.fixed.size
        self.times = Timestamps()
        self.stamp: bytes | None = None
        self.panes: dict[int, Pane | ColumnPane] = {}
        self.columns = self.proc.columns  # the kernel's group layout (``pane_columns``), None: tagged rows
        self.now = utc_now()

    def _env(self, tup: Tuple) -> Env:
        return Env({self.proc.alias: tup}, None, self.now)

    def _key(self, row: Tuple) -> Any:
        return self.proc.grouping.row_key(self._env(row))

    def _pane(self, start: int, get: Callable[[str], bytes | None]) -> Pane | ColumnPane:
        pane = self.panes.get(start)
        if pane is None:
            snap = get(str(start))
            pane = self.panes[start] = (
                load_pane(pickle.loads(snap), self.columns, self._key, self._env) if snap is not None else
                (Pane if self.columns is None else ColumnPane)(0, start, start + self.size))
        return pane

    def _add(self, pane: Pane | ColumnPane, tup: Tuple, start: int) -> None:
        end = start + self.size
        cols = self.columns
        if cols is None:
            row = tag(tup, start, end)
            pane.add(row, self._key(row))
            return
        row = tag(tup, start, end) if cols.tag_rows else tup
        cols.add(pane, cols.key(row, start, end, self._env), row, start, end, self._env)

    def run(self, rows: Iterable[tuple], stored_stamp: bytes | None, get: Callable[[str], bytes | None],
            put: Callable[[str, bytes], None], remove: Callable[[str], None]) -> tuple[list[tuple], bytes]:
        """Rows in ``ROW_COLUMNS`` order, sorted by ``(seq, idx)`` → ``(output rows, new stamp)``.
        ``get``/``put``/``remove``: the bucket's committed window map (start text → pickled pane). The
        cyclic collector is paused meanwhile (``gc_pause``)."""
        with gc_pause.paused():
            return self._run(rows, stored_stamp, get, put, remove)

    def _run(self, rows: Iterable[tuple], stored_stamp: bytes | None, get: Callable[[str], bytes | None],
             put: Callable[[str, bytes], None], remove: Callable[[str], None]) -> tuple[list[tuple], bytes]:
        if stored_stamp is None or stored_stamp != self.stamp:
            self.panes = {}  # the committed state is not what these panes were saved as
        self.stamp = None
        self.now = utc_now()  # ``now()`` of this call's steps (the kernel reads its clock per tuple)
        out: list[tuple] = []
        touched: set[int] = set()
        counts = {"sent": 0, "dropped": 0}
        last = 0
        try:
            for r in rows:
                kind = r[0]
                if kind == "tuple" and r[1] == self.route and r[9] is not None:
                    last = r[2]
                    tup = Tuple(jf.decode_data(r[6]), self.times.get(r[5]), r[2], r[8])
                    starts = r[9]
                    for start in orjson.loads(starts) if "," in starts else (int(starts[1:-1]),):
                        self._add(self._pane(start, get), tup, start)
                        touched.add(start)
                elif kind == "close" and r[1] == self.node:
                    last = r[2]
                    start = int(r[6])
                    self._emit(self._pane(start, get), r, out, counts)
                    del self.panes[start]
                    touched.discard(start)
                    remove(str(start))
                else:
                    out.append(r)
            for start in touched:
                put(str(start), pickle.dumps(self.panes[start].state(), protocol=pickle.HIGHEST_PROTOCOL))
        except BaseException:
            self.panes = {}
            raise
        if counts["sent"] or counts["dropped"]:
            data = jf.encode_data({"received": {}, "sent": counts["sent"], "dropped": counts["dropped"]})
            out.append(("stat", self.node, last, 1 << 62, 0, 0, data, None, None, None, None))
        stamp = os.urandom(16)
        self.stamp = stamp
        return out, stamp

    def _emit(self, pane: Pane | ColumnPane, close: tuple, out: list[tuple], counts: dict[str, int]) -> None:
        """The closed pane's groups, as the kernel's ``_emit_groups`` makes them (cause: the close row)."""
        seq, idx, out_idx, ts, route = close[2], close[3], int(close[9]), close[5], close[8]
        grouping, now, cols = self.proc.grouping, utc_now(), self.columns
        for key, rows in pane.groups(self._key).items():
            if not rows:
                continue
            base = (rows[0].seq if cols is None else rows.first.seq) << SUB_BITS
            try:
                if cols is None:
                    produced = grouping.evaluate([(self._env(r), key) for r in rows], now)
                else:
                    produced = cols.outputs(rows, now)
            except Exception as err:  # noqa: BLE001 - one failing group does not stop the others
                counts["dropped"] += 1
                out.append(("dropped", self.node, seq, idx, base, ts, jf.encode_data({}), _message(err), route,
                            "output", None))
                continue
            if len(produced) >= 1 << SUB_BITS:
                raise ValueError(f"a group emitted {len(produced)} rows")
            for j, data in enumerate(produced):
                counts["sent"] += 1  # the kernel's count: an output that cannot be written was still sent
                try:
                    text = jf.encode_data(_copy(data))
                except Exception as exc:  # noqa: BLE001
                    out.append(("dropped", self.node, seq, out_idx, base + j, 0, None, _error_text(exc), self.node,
                                "output", None))
                    continue
                out.append((self.out_kind, self.node, seq, out_idx, base + j, ts, text, None, self.node, None, None))
