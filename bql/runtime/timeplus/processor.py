"""``WindowProcessor``: a Timeplus-style streaming query over one stream, one tuple at a time.

FROM is ``tumble(s, [time,] size)``, ``hop(s, [time,] slide, size)``, ``session(s, [time,] gap[, max])``
or a bare stream ``s`` (a streaming tail, or a global aggregation with ``EMIT ON UPDATE`` / ``PERIODIC``,
``PERIODIC 2s`` when a tail aggregates). A ``now64()`` / ``now()`` time makes processing-time windows: the
time is ``clock()`` when the tuple arrives (``clock`` is replaceable for tests) and ticks close windows
(``ticking.py``). The semantics are design/timeplus-semantics.md section 4:

*Aggregating* queries (GROUP BY or an aggregate call) keep one pane per window (``panes.py``): each step
computes the tuple's event time, advances the watermark (``watermark.py``; before WHERE), drops a late
tuple (reported as ``Dropped``, so it reaches ``dropped_tuples``), assigns the tuple to its window(s)
(``assign.py``, ``sessions.py``) if it passes WHERE, lets the EMIT policy (``emission.py``) emit the
groups it changed (ON UPDATE), then closes every pane with ``end <= C`` (AFTER WATERMARK emits them in
``window_start`` order). ``finish`` flushes the open panes in ``window_start`` order.

*Non-aggregating* queries tag every tuple with its window columns and emit it at once (hop: one row per
window); they have no watermark, drop nothing and ignore the EMIT policy (a streaming tail).

The grouping, HAVING and select-list logic is the BQL kernel's (``grouping.Grouping``, ``SelectList``):
``window_start`` / ``window_end`` are plain fields of each stored (tagged) tuple. Every output tuple
carries the timestamp and seq of the tuple whose arrival caused it (end of input: the last tuple; a
PERIODIC tick: the tick time). ``LIMIT n`` stops after the n-th row, even mid-emission, and sets
``StepResult.done``; ``OFFSET m`` first skips m rows (the LIMIT counts the rows after them).
``lag`` and ``emit_version`` (Proton's stateful functions) are ``streaming_calls.StreamingCalls``.
"""
from __future__ import annotations

import datetime as _dt
import heapq
import math
from typing import Any

from ...ast import EmitClause, FieldRef, KeyStep, Select, StreamRef, WindowFunction
from ...errors import UnsupportedFeatureError
from ...eval import Env, Scope, compile_expr
from ...timeplus_query import GLOBAL_PERIOD, is_streaming_tail
from ...values import multiset_key
from ..grouping import Grouping, compile_where, is_grouping
from ..incremental.field_access import MISSING, plain_field
from ..incremental.relation import emitted_copy
from ..kernel import _message, truth
from ..processor import Dropped, ProcessorContext, StepResult, Tuple
from ..projection import SelectList
from .assign import FixedWindows
from .emission import AFTER_WATERMARK, ON_UPDATE, EmitPolicy
from .emit_extras import IdleTimeout, LastRange
from .fixed_step import FixedStep, fixed_step_of
from .limited_output import LimitedOutput
from .pane_columns import ColumnPane, PaneColumns
from .panes import WINDOW_END, WINDOW_START, Pane, tag
from .processor_state import WindowSnapshot
from .sessions import SessionTracker
from .streaming_calls import StreamingCalls, uses_streaming_calls
from .ticking import WallClock
from .timecol import US, bound_value, datetime_micros, is_processing_time, to_micros, utc_now
from .watermark import Watermark, late_error

_FINITE = math.inf  # ``-_FINITE < v < _FINITE``: ``math.isfinite`` for a float, NaN excluded


def _is_window_column(expr: Any) -> bool:
    return (isinstance(expr, FieldRef) and len(expr.path) == 1 and isinstance(expr.path[0], KeyStep)
            and expr.path[0].key in (WINDOW_START, WINDOW_END))


class WindowProcessor(WallClock, FixedStep, WindowSnapshot):
    """The compiled Timeplus window / EMIT query (the ``Processor`` protocol)."""

    def __init__(self, select: Select, context: ProcessorContext | None = None):
        context = context or ProcessorContext()
        registry = context.functions
        if len(select.from_items) != 1:
            raise UnsupportedFeatureError("a window-function or EMIT query reads exactly one stream")
        item = select.from_items[0]
        time_expr = None
        if isinstance(item, WindowFunction):
            self.kind: str | None = item.kind.lower()
            stream, alias, time_expr = item.stream, item.alias or item.stream, item.time_expr
        elif isinstance(item, StreamRef) and item.window is None:
            self.kind, stream, alias = None, item.name, item.alias or item.name
        else:
            raise UnsupportedFeatureError("EMIT cannot be used with a RANGE window; use tumble(), hop() or session()")
        self.calls = StreamingCalls(select, registry, alias) if uses_streaming_calls(select) else None
        if self.calls is not None:  # lag sites rewritten, a registry of the query's own
            select, registry = self.calls.select, self.calls.registry
        self.select = select
        self.alias = alias
        self.inputs: tuple[str, ...] = (stream,)
        scope = Scope((alias,), registry=registry)
        self.time_expr = time_expr
        self.time_fn = compile_expr(time_expr, scope) if time_expr is not None else None
        field = plain_field(time_expr, (alias,)) if time_expr is not None else None
        self.time_field = field[1] if field is not None else None  # read inline by ``_time``
        self.proctime = self.kind is not None and is_processing_time(time_expr)  # tumble(s, now64(), 5s)
        self.clock = utc_now  # the processing-time source (``_now`` of each step); tests replace it
        self.where = compile_where(select.where, (alias,), registry)
        self.grouping = Grouping(select, (alias,), registry) if is_grouping(select, registry) else None
        self.select_list = None if self.grouping else SelectList(
            select.projections, (alias,), lambda e: compile_expr(e, scope))
        emit = select.emit
        if emit is None and self.grouping is not None and is_streaming_tail(select):  # Proton's default
            emit = EmitClause("periodic", period=GLOBAL_PERIOD, implicit=True)
        self.policy = EmitPolicy(emit)
        if self.grouping is not None and self.kind is None and self.policy.kind == AFTER_WATERMARK:
            raise UnsupportedFeatureError(
                "a global aggregation over a bare stream needs EMIT ON UPDATE or EMIT PERIODIC")
        self.fixed = FixedWindows.of(item) if self.kind in ("tumble", "hop") else None
        self.sessions = SessionTracker.of(item) if self.kind == "session" else None
        self.watermark = Watermark(self.policy.delay, self.fixed.closed_end if self.fixed else None)
        self.session_keys = [compile_expr(g, scope) for g in select.group_by if not _is_window_column(g)]
        # window aggregations keep their groups' aggregate arguments instead of their rows (pane_columns)
        self.columns = (PaneColumns.of(select, self.grouping, alias, registry, session=self.sessions is not None,
                                       on_update=self.policy.kind == ON_UPDATE,
                                       marks_dirty=self.policy.kind != AFTER_WATERMARK)
                        if self.kind is not None and self.calls is None else None)
        aggregating = self.grouping is not None
        self.timeout = IdleTimeout.of(select.emit) if aggregating and self.kind else None
        self.last_range = LastRange.of(select.emit) if aggregating and self.kind is None else None
        self.out = LimitedOutput(select.limit, select.offset)
        self.fixed_step, self.clocked, self.shared_windows, self.session_rows = fixed_step_of(
            self, select, registry)
        self._now: _dt.datetime | None = None
        self._reset()

    def _reset(self) -> None:
        self.panes: dict[int, Pane] = {}
        self.by_bounds: dict[tuple[int, int], int] = {}
        self.pending: list[Pane] = []  # closed panes kept for the next PERIODIC emission
        # min-heap of (end, pid): an open pane has an entry at or before its end (a session's entry moves
        # when ``_close`` reaches it; stale entries are skipped)
        self.ends: list[tuple[int, int]] = []
        self.global_pid: int | None = None
        self.next_pid = 0
        self.out.reset()
        self.finished = False
        self.last: tuple[_dt.datetime, int] | None = None  # (ts, seq) of the latest tuple

    def kernel_description(self) -> str:
        """EXPLAIN's ``kernel:`` words: how the windows keep their groups."""
        if self.grouping is None:
            return "Timeplus window kernel (each tuple tagged and emitted at once)"
        if self.columns is not None:
            return ("Timeplus window kernel, groups as aggregate columns (first row and argument values per "
                    "group, no tuple copies)")
        return "Timeplus window kernel, groups as tagged rows (re-aggregated when emitted)"

    @property
    def done(self) -> bool:
        """LIMIT reached: the query produces nothing more."""
        return self.out.done

    # ------------------------------------------------------------ helpers

    def _env(self, tup: Tuple) -> Env:
        return Env({self.alias: tup}, None, self._now)

    def _key(self, row: Tuple) -> Any:
        return self.grouping.row_key(self._env(row))

    def _time(self, tup: Tuple) -> int:
        """The tuple's event time in µs: its timestamp, or its time column's value (a plain field read
        inline, ``field_access``: the compiled closure only when it is missing, which raises its error)."""
        if self.time_fn is None:
            return datetime_micros(tup.ts)
        data, field = tup.data, self.time_field
        if field is not None and type(data) is dict:
            v = data.get(field, MISSING)
            kind = type(v)
            if kind is float and -_FINITE < v < _FINITE:  # ``to_micros``' common cases inline
                return round(v * US)
            if kind is int:
                return v * US
            if v is not MISSING:
                return to_micros(v)
        return to_micros(self.time_fn(self._env(tup)))

    def _passes(self, tup: Tuple) -> bool:
        return self.where is None or truth(self.where(self._env(tup)), "WHERE")

    def _new_pane(self, start: int | None, end: int | None, **kw: Any) -> Pane | ColumnPane:
        if self.columns is None:
            pane: Pane | ColumnPane = Pane(self.next_pid, start, end, **kw)
        else:
            pane = ColumnPane(self.next_pid, start, end, session=self.sessions is not None, **kw)
        self.next_pid += 1
        self.panes[pane.pid] = pane
        if end is not None:
            heapq.heappush(self.ends, (end, pane.pid))
        return pane

    # ------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        if self.fixed_step:
            return self._fixed_step(tup)
        result = StepResult()
        if self.done or self.finished:
            result.done = self.done
            return result
        self._now = self.clock()
        self.last = (tup.ts, tup.seq)
        if self.timeout is not None:
            self.timeout.arrived(datetime_micros(self._now))
        try:
            if self.grouping is None:
                self._tag_step(tup, result)
            else:
                self._aggregate_step(tup, result)
        except Exception as err:  # per-tuple isolation: fallible work happens before state changes
            if self.calls is not None:
                self.calls.discard()
            result.dropped.append(Dropped(tup, _message(err), "other"))
        result.done = self.done
        return result

    def finish(self, input_name: str) -> StepResult:
        result = StepResult()
        if self.finished or self.done:
            result.done = self.done
            return result
        self.finished = True
        if self.grouping is not None and self.last is not None:
            self._now = self.clock()
            self._expire_last_range()
            panes = list(self.panes.values()) + self.pending
            self._emit(self.policy.at_finish(panes, self._key), self.last, result)
            self.panes, self.by_bounds, self.pending, self.ends = {}, {}, [], []
        result.done = self.done
        return result

    # ------------------------------------------------------------ non-aggregating queries

    def _tag_step(self, tup: Tuple, result: StepResult) -> None:
        if self.fixed is not None:
            candidates = [tag(tup, s, e) for s, e in self.fixed.windows_for(self._time(tup))]
        elif self.sessions is not None:
            t = self._time(tup)
            placement = self.sessions.place((), t)
            candidates = [tag(tup, placement.start, placement.end)]
        else:
            candidates = [tup]
        rows = []
        for c in candidates:
            if self._passes(c):
                env = self._env(c)
                if self.calls is not None:
                    self.calls.prepare(env)
                rows.append(self.select_list.evaluate(env))
        if self.calls is not None:
            self.calls.commit()
        if self.sessions is not None and rows:
            pid = placement.pid
            if pid is None:
                pid, self.next_pid = self.next_pid, self.next_pid + 1
            self.sessions.commit((), pid, placement)
        for row in rows:
            self._output(row, tup.ts, tup.seq, result)

    # ------------------------------------------------------------ aggregating queries

    def _aggregate_step(self, tup: Tuple, result: StepResult) -> None:
        changed: list[tuple[Pane, Any]] = []
        if self.kind is None:
            t = None
            if self.last_range is not None:
                t = datetime_micros(self._now) if self.last_range.proctime else self._time(tup)
                if self.last_range.is_late(t):
                    result.dropped.append(Dropped(
                        tup, f"late tuple: its time {bound_value(t)} is not after the start "
                             f"{bound_value(self.last_range.late_bound())} of the EMIT LAST range", "input"))
                    return
            if self._passes(tup):
                key = self._key(tup)
                if self.global_pid is None:
                    self.global_pid = self._new_pane(None, None).pid
                pane = self.panes[self.global_pid]
                pane.add(tup, key)
                if self.last_range is not None:
                    self.last_range.added(t)
                changed.append((pane, key))
        else:
            t = self._time(tup)
            watermark = self.watermark
            watermark.observe(t)
            if watermark.is_late(t):
                result.dropped.append(Dropped(tup, late_error(t, watermark.late_threshold()), "input"))
                return
            if self.fixed is not None:
                changed = self._assign_fixed(tup, t)
            else:
                changed = self._assign_session(tup, t)
        requests = self.policy.after_tuple(changed)
        if requests or self.calls is not None:
            self._emit(requests, (tup.ts, tup.seq), result)
        if self.kind is not None and self.ends and self.ends[0][0] <= self.watermark.close_bound:
            self._close((tup.ts, tup.seq), result)

    def _assign_fixed(self, tup: Tuple, t: int) -> list[tuple[Pane, Any]]:
        cols = self.columns
        plan = []
        for start, end in self.fixed.windows_for(t):
            row = tag(tup, start, end) if cols is None or cols.tag_rows else tup
            if self._passes(row):
                plan.append((start, end, row, self._key(row) if cols is None else cols.key(row, start, end, self._env)))
        changed = []
        for start, end, row, key in plan:
            pane = self._fixed_pane(start, end)
            if cols is None:
                pane.add(row, key)
            else:
                cols.add(pane, key, row, start, end, self._env)
            changed.append((pane, key))
        return changed

    def _fixed_pane(self, start: int, end: int) -> Pane | ColumnPane:
        """The open tumble/hop pane of ``[start, end)``, made if it is the first row's."""
        pid = self.by_bounds.get((start, end))
        if pid is None:
            pid = self.by_bounds[(start, end)] = self._new_pane(start, end).pid
        return self.panes[pid]

    def _assign_session(self, tup: Tuple, t: int) -> list[tuple[Pane, Any]]:
        env = self._env(tup)
        skey = tuple(multiset_key(fn(env)) for fn in self.session_keys)
        placement = self.sessions.place(skey, t)
        cols = self.columns
        # column panes that read no window column take the tuple as is (the group's first row is tagged)
        row = tup if cols is not None and not cols.tag_rows else tag(tup, placement.start, placement.end)
        if not self._passes(row):
            return []
        key = self._key(row) if cols is None else None  # columns: the pane's one group
        if placement.pid is None:
            pane = self._new_pane(placement.start, placement.end, skey=skey, last=placement.last)
        else:
            pane = self.panes[placement.pid]
            if placement.end < pane.end:  # a later end keeps its entry in ``ends`` (``_close`` moves it)
                heapq.heappush(self.ends, (placement.end, pane.pid))
            pane.set_bounds(placement.start, placement.end)
            pane.last = placement.last
        if cols is None:
            pane.add(row, key)
        else:
            cols.add_session(pane, row, self._env)
        self.sessions.commit(skey, pane.pid, placement)
        if self.policy.kind == ON_UPDATE:  # the group's key under the session's new bounds (O(rows))
            key = pane.key_of(row, self._key)
        return [(pane, key)]

    def _close(self, cause: tuple[_dt.datetime, int], result: StepResult) -> None:
        bound = self.watermark.close_bound
        closing: list = []
        chosen: set[int] = set()
        ends = self.ends
        while ends and ends[0][0] <= bound:
            end, pid = heapq.heappop(ends)
            pane = self.panes.get(pid)
            if pane is None or pid in chosen:
                continue  # closed, or closing: a session can hold two entries at its end
            if pane.end == end:
                closing.append(pane)
                chosen.add(pid)
            elif pane.end > end:  # a session whose end moved later since: its entry moves with it
                heapq.heappush(ends, (pane.end, pid))
            # else a later entry of a session whose end moved earlier (the earlier entry is in ``ends``)
        if not closing:
            return
        for pane in closing:
            del self.panes[pane.pid]
            if self.fixed is not None:
                self.by_bounds.pop((pane.start, pane.end), None)
            else:
                self.sessions.closed(pane.skey, pane.pid)
        requests, keep = self.policy.on_close(closing)
        self.pending.extend(keep)
        self._emit(requests, cause, result)

    # ------------------------------------------------------------ output

    def _emit(self, requests: list, cause: tuple[_dt.datetime, int], result: StepResult) -> None:
        """One emission: the rows of ``requests`` (pane, keys), in order, up to LIMIT."""
        self._emit_groups(requests, cause, result)
        if self.calls is not None:
            self.calls.emission_done()

    def _emit_groups(self, requests: list, cause: tuple[_dt.datetime, int], result: StepResult) -> None:
        for pane, keys in requests:
            if self.done:
                return
            groups = pane.groups(self._key)
            for key in (list(groups) if keys is None else keys):
                rows = groups.get(key)
                if not rows:
                    continue
                try:
                    out = (self.grouping.evaluate([(self._env(r), key) for r in rows], self._now)
                           if self.columns is None else self.columns.outputs(rows, self._now))
                except Exception as err:  # one failing group does not stop the others
                    result.dropped.append(Dropped(Tuple({}, cause[0], cause[1]), _message(err), "output"))
                    continue
                if out and self.calls is not None:
                    self.calls.produced()
                for data in out:
                    self._output(data, cause[0], cause[1], result)
                    if self.done:
                        return

    def _output(self, data: dict[str, Any], ts: _dt.datetime, seq: int, result: StepResult) -> None:
        if self.out.admit():
            result.outputs.append(Tuple(emitted_copy(data), ts, seq, ""))
