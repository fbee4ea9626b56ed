"""``MatchRecognizeProcessor``: SELECT ... FROM stream MATCH_RECOGNIZE (...) as a per-tuple processor.

Each arriving tuple goes to its partition (PARTITION BY values), through the ORDER BY reorder buffer
(``Rows``, configured by the clause's SETTINGS: ``time_order.py``) into the matcher; the matches it
resolves are rendered (``OutputBuilder``), then the outer SELECT list and WHERE are applied. Only
RSTREAM: the rows a tuple produces are emitted when it arrives. With the global watermark, a tuple that
moves the stream's time also releases (and matches) the held rows of the other partitions; with WITHIN,
attempts older than the span end once the watermark passes it. A match whose measures need a later row
(NEXT) waits in the partition's queue until that row arrives or the input ends. ``finish`` ends every
partition (held rows released, ``$`` decided, open matches finalised as at the end of a table).
docs/match-recognize.md states the time rules.
"""
from __future__ import annotations

import datetime as _dt
import pickle
from collections import deque
from typing import Any

from ...ast import FieldRef, MatchRecognize, PatternFieldRef, Wildcard
from ...errors import BQLAnalysisError, BQLError
from ...eval import Env, Scope, compile_expr
from ...values import multiset_key
from ..processor import NOTHING, Dropped, ProcessorContext, StepResult, Tuple
from ..projection import SelectList, default_label
from ..relation_shape import RelationShape
from .engine import build_engine, wants_lane
from .exprs import MRContext
from .fastpath import OneRowMeasures, field_key
from .lane import compile_lane
from .lane_process import lane_deliver, make_process
from .levels import define_level, max_offsets
from .match_time import MatchTime
from .matcher import MatchSpec
from .output import OutputBuilder
from .partition import AHEAD, Desc, Partition
from .program import compile_pattern, program_variables
from .time_order import DEFAULT_DELAY, StreamClock, TimeOrder
from .views import Blocked

DEFAULT_REORDER_BOUND = DEFAULT_DELAY
_CLOCK = "\x00clock"  # the global watermark's clock in a snapshot (partition keys are tuples)


def _plain(expr: Any, alias: str) -> Any:
    """A PARTITION BY / ORDER BY expression over the input tuple (undo a pattern-ref rewrite)."""
    from ...analyzer.rewrite import transform

    def fn(n: Any) -> Any:
        if isinstance(n, PatternFieldRef) and n.var is None:
            return FieldRef(path=n.path, stream=None, span=n.span)
        return n
    return transform(expr, fn)


class MatchRecognizeProcessor:
    """The processor of a SELECT whose FROM item is a MATCH_RECOGNIZE clause."""

    def __init__(self, select: Any, context: ProcessorContext | None = None,
                 reorder_bound: float | None = None, engine: str | None = None):
        """``engine``: ``matcher`` forces the matcher, ``auto``/``automaton`` (default: the
        ``SBPY_MATCH_ENGINE`` environment variable, else ``auto``) use the automaton where exact."""
        context = context or ProcessorContext()
        items = select.from_items
        if len(items) != 1 or not isinstance(items[0], MatchRecognize):
            raise BQLAnalysisError("MATCH_RECOGNIZE must be the only FROM item")
        mr: MatchRecognize = items[0]
        self.mr = mr
        self.inputs = (mr.input.name.lower(),)
        in_alias = mr.input.alias or mr.input.name
        self.in_alias = in_alias
        self.time_order = TimeOrder.from_settings(mr.settings, reorder_bound)
        self.bound = self.time_order.delay
        self.clock = StreamClock() if self.time_order.scope == "global" else None
        if mr.order_by and mr.order_by[0].descending:
            raise BQLAnalysisError("the first MATCH_RECOGNIZE ORDER BY key is the time attribute and must be "
                                   "ascending (DESC is allowed on the later keys)", mr.order_by[0].span)
        self.desc = tuple(k.descending for k in mr.order_by) if any(k.descending for k in mr.order_by) else None

        program = compile_pattern(mr.pattern)
        variables = program_variables(program)
        sets = {v: frozenset((v,)) for v in variables}
        for d in mr.defines:
            sets.setdefault(d.name.upper(), frozenset((d.name.upper(),)))
        for s in mr.subsets:
            sets[s.name.upper()] = frozenset(v.upper() for v in s.variables)
        ctx = MRContext(context.functions, sets, in_alias)
        registry = ctx.registry

        conds = {}
        level = 1
        define_exprs = []
        by_var = {}
        for d in mr.defines:
            var = d.name.upper()
            expr = by_var[var] = ctx.normalise(d.condition)
            define_exprs.append(expr)
            if any(isinstance(n, MatchTime) for n in expr.walk()):
                raise BQLAnalysisError("MATCH_ROWTIME() and MATCH_PROCTIME() can only be used in MEASURES",
                                       d.span)
            lv = define_level(expr, var, registry)
            level = max(level, lv)
            conds[var] = (ctx.compile(expr), lv, ctx.compile_row_local(expr, var) if lv == 1 else None)
        measure_exprs = [ctx.normalise(m.expr) for m in mr.measures]
        measures = [(m.alias, ctx.compile(e)) for m, e in zip(mr.measures, measure_exprs)]
        self.lookback = max_offsets(define_exprs + measure_exprs)[0]
        within = mr.within.seconds() if mr.within is not None else None
        skip = mr.after_match
        self.spec = MatchSpec(program, conds, level, within, skip.mode,
                              skip.var.upper() if skip.var else None, sets, ctx)
        in_scope = Scope((in_alias,), registry)
        self.part_fns = [compile_expr(_plain(e, in_alias), in_scope) for e in mr.partition_by]
        self.order_fns = [compile_expr(_plain(k.expr, in_alias), in_scope) for k in mr.order_by]
        pnames = [default_label(_plain(e, in_alias), i) for i, e in enumerate(mr.partition_by)]
        self.builder = (OneRowMeasures.compile(mr, measure_exprs, sets, pnames)
                        or OutputBuilder(measures, pnames, mr.rows_per_match, mr.empty_matches, ctx))
        unmatched_rows = mr.rows_per_match == "all" and mr.empty_matches == "with_unmatched"
        self.engine, self.automaton, self.fallback_reason, masks = build_engine(
            mr, self.spec, variables, by_var, define_exprs, engine, unmatched_rows)

        out_alias = mr.alias or in_alias
        out_scope = Scope((out_alias,), registry)
        self.out_alias = out_alias
        self.select_list = SelectList(select.projections, (out_alias,), lambda e: compile_expr(e, out_scope))
        self.where = compile_expr(select.where, out_scope) if select.where is not None else None
        only = select.projections[0] if len(select.projections) == 1 else None
        self.star_only = (select.where is None and only is not None and isinstance(only.expr, Wildcard)
                          and only.expr.stream is None and only.alias is None)
        # SELECT RSTREAM * over simple ONE ROW PER MATCH measures: matches straight to output tuples
        # (the lanes' ``deliver``: ``OneRowMeasures.lane_deliver``)
        simple = self.star_only and type(self.builder) is OneRowMeasures
        self.star_outputs = self.builder.lane_deliver if simple else None
        self.parts: dict[Any, Partition] = {}
        # WITHIN: attempts older than the span end when the watermark passes it (False: only when a
        # later row of their partition arrives — the reference the tests compare against)
        self.expire_by_time = mr.within is not None
        # the in-order shortcut of ``process``: one ORDER BY field, at most one PARTITION BY field
        keys = [field_key(_plain(e, in_alias), in_alias) for e in mr.partition_by]
        okeys = [field_key(_plain(k.expr, in_alias), in_alias) for k in mr.order_by]
        self.fast_keys = None
        if (self.automaton is not None and len(keys) <= 1 and None not in keys and len(okeys) == 1
                and okeys[0] is not None and type(self.bound) in (int, float) and self.time_order.is_default):
            self.fast_keys = (keys[0] if keys else None, okeys[0])
        # the compiled lane (``lane.py``) for the rows ``process`` takes the shortcut with
        # (not when a measure reads a later row: its match waits in ``pending``)
        self.make_lane = None
        self.lanes: dict = {}  # partition value (str, or () without PARTITION BY) -> its lane's feed
        if (self.fast_keys is not None and masks is not None and wants_lane(engine)
                and max_offsets(measure_exprs)[1] == 0):
            past_last = self.spec.skip_mode == "past_last_row"
            self.make_lane = compile_lane(masks, self.automaton, self.spec, NOTHING, delay=self.bound,
                                          lookback=self.lookback, unmatched=unmatched_rows,
                                          order_key=self.fast_keys[1], past_last=past_last)
        self.by_str: dict[str, Partition] = {}  # partitions by their one str PARTITION BY value
        # the SELECT's ORDER BY sorts the rows one step emits (a step's relation, docs/sql-breadth.md)
        self.shape = RelationShape.of(select, registry) if select.order_by else None
        self.lane_process = None
        if self.make_lane is not None:
            self.lane_process = make_process(self.lanes, self.fast_keys[0], self.fast_keys[1], self._process)
            self.process = self.lane_process
        if self.shape is not None:
            self.process = self._shaped_process

    def engine_description(self) -> str:
        """Which engine matches the pattern, for EXPLAIN: ``deterministic automaton (n states built so
        far)`` (states are built as rows reach them) or ``backtracking matcher: <why>``."""
        if self.automaton is not None:
            lane = ", in-order rows through the compiled lane" if self.make_lane is not None else ""
            return f"deterministic automaton ({len(self.automaton.table)} states built so far){lane}"
        return f"backtracking matcher: {self.fallback_reason}"

    # ------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        """One tuple. With the compiled lane (``lane_process.make_process``, also bound as the
        instance's ``process``), a tuple of a known partition (one str PARTITION BY field, or none)
        goes to the partition's lane, which takes it when its one ORDER BY field is a number of the type
        and at least the size of every earlier key (such a row is never late and goes after every held
        row). Everything else goes through ``_process``."""
        if self.lane_process is not None:
            return self.lane_process(tup)
        return self._process_in_order(tup)

    def _process_in_order(self, tup: Tuple) -> StepResult:
        """``process`` without the lane (the ``automaton`` engine): a tuple of a known partition
        whose ORDER BY key is in order (as for the lane) takes a shortcut through ``Rows.offer``: it
        is appended to the held rows and the rows its watermark releases are moved to the store."""
        fast = self.fast_keys
        if fast is not None:
            data = tup.data
            if fast[0] is None:
                part = self.parts.get(())
            else:
                pv = data.get(fast[0])
                part = self.by_str.get(pv) if type(pv) is str else None
            if part is not None:
                k0 = data.get(fast[1])
                rows = part.rows
                mx = rows.max0
                tk = type(k0)
                if mx is not None and tk is type(mx) and (tk is int or tk is float) and k0 >= mx:
                    result = StepResult()
                    # Rows.offer: held, then the rows the new watermark releases
                    rows.max0 = k0
                    rows.arrival += 1
                    held = rows.held
                    held.append(((k0,), rows.arrival, tup))
                    wm = k0 - self.bound
                    if held[0][0][0] <= wm:
                        n = 1
                        while n < len(held) and held[n][0][0] <= wm:
                            n += 1
                        for e in held[:n]:
                            rows.rows.append(e[2])
                            rows.keys.append(e[0])
                        del held[:n]
                        self._run(part, tup, result)
                    return result
        return self._process(tup)

    def _process(self, tup: Tuple) -> StepResult:
        """``process`` in general: compiled PARTITION BY / ORDER BY expressions and ``Rows.offer``."""
        result = StepResult()
        env = Env({self.in_alias: tup})
        try:
            pvalues = tuple(f(env) for f in self.part_fns)
            key = tuple(f(env) for f in self.order_fns)
            if self.desc is not None:
                key = tuple(Desc(v) if d else v for v, d in zip(key, self.desc))
        except BQLError as err:
            result.dropped.append(Dropped(tup, f"MATCH_RECOGNIZE: {err}"))
            return result
        pk = tuple(multiset_key(v) for v in pvalues)
        part = self.parts.get(pk)
        if part is None:
            part = self.parts[pk] = self._new_partition(pvalues)
        else:
            part.sync()
        clock = self.clock
        before = clock.max0 if clock is not None else None
        refused = part.rows.offer(tup, key)
        if refused == AHEAD:
            result.dropped.append(Dropped(
                tup, "MATCH_RECOGNIZE: row is further ahead of the stream's time than "
                     f"time_order_recover_ahead ({self.time_order.ahead}) allows and was dropped", "input"))
            return result
        if refused is not None:
            result.dropped.append(Dropped(
                tup, f"MATCH_RECOGNIZE: row arrived later than the ORDER BY reorder bound ({self.bound}) "
                     "allows and was dropped", "input"))
            return result
        self._run(part, tup, result)
        if clock is not None and clock.max0 != before:
            self._release_everywhere(part, tup, result)
        return result

    def _release_everywhere(self, moved: Partition, tup: Tuple, result: StepResult) -> None:
        """The global watermark moved (``moved``'s row raised the clock): every other partition
        releases its held rows up to it and matches them, in the order the partitions were first
        seen."""
        wm = moved.rows._watermark()
        for part in self.parts.values():
            if part is moved:
                continue
            part.sync()
            if (part.rows.held and part.rows.release(wm)) or (self.expire_by_time and part.matcher.live):
                self._run(part, tup, result)

    def finish(self, input_name: str) -> StepResult:
        result = StepResult()
        if input_name.lower() not in self.inputs:
            return result
        for part in self.parts.values():
            part.sync()
            part.rows.end()
            self._run(part, None, result)
        return self._shaped(result) if self.shape is not None else result

    def _shaped_process(self, tup: Tuple) -> StepResult:
        return self._shaped(MatchRecognizeProcessor.process(self, tup))

    def _shaped(self, result: StepResult) -> StepResult:
        """``result`` with its output rows in the SELECT's ORDER BY order (stable); a key that cannot be
        evaluated drops the step's rows, reported with the tuple that produced the first of them."""
        outputs = result.outputs
        if len(outputs) < 2:
            return result
        try:
            rows = self.shape.apply([t.data for t in outputs])
        except BQLError as err:
            result.dropped.append(Dropped(outputs[0], f"MATCH_RECOGNIZE ORDER BY: {err}", "output"))
            result.outputs = []
            return result
        by_id = {id(t.data): t for t in outputs}
        result.outputs = [by_id[id(row)] for row in rows]
        return result

    def tick(self, now: _dt.datetime) -> StepResult:
        return StepResult()

    def snapshot(self) -> bytes:
        for part in self.parts.values():
            part.sync()
        state: dict = {pk: (p.values, p.rows.to_state(), p.matcher.to_state(), list(p.pending))
                       for pk, p in self.parts.items()}
        if self.clock is not None:
            state[_CLOCK] = self.clock.max0
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        self.parts = {}
        self.by_str = {}
        self.lanes.clear()
        state = pickle.loads(data)
        clock_max = state.pop(_CLOCK, None)
        if self.clock is not None:
            self.clock.max0 = clock_max
        for pk, (values, rows, matcher, pending) in state.items():
            part = self._new_partition(values, (rows, matcher, pending))
            self.parts[pk] = part

    # ------------------------------------------------------------ internals

    def _new_partition(self, values: tuple, state: tuple | None = None) -> Partition:
        """A new partition, registered by its value; ``state``: its snapshot ``(rows, matcher,
        pending)``, restored before the lane (which holds the rows' lists) is made."""
        part = Partition(values, self.engine, self.time_order, self.clock)
        if state is not None:
            part.rows.from_state(state[0])
            part.matcher.from_state(state[1])
            part.pending = deque(state[2])
        if self.make_lane is not None:
            deliver = lane_deliver(part, self._render, self.star_outputs)
            part.feed, part.flush, part.sync_keys = self.make_lane(part, deliver)
        if len(values) == 1 and type(values[0]) is str:
            self.by_str[values[0]] = part
            if part.feed is not None and self.fast_keys[0] is not None:
                self.lanes[values[0]] = part.feed
        elif not values and part.feed is not None and self.fast_keys[0] is None:
            self.lanes[()] = part.feed
        return part

    def _run(self, part: Partition, tup: Tuple | None, result: StepResult) -> None:
        events = part.matcher.advance()
        rows = part.rows
        if self.expire_by_time and not rows.ended:
            wm = rows._watermark()
            if wm is not None:
                events = events + part.matcher.expire(wm)
        self._render(part, events, tup, result)
        rows = part.rows
        if len(rows.rows) > 64:  # (``trim`` never forgets fewer than 65 rows)
            keep = part.matcher.min_needed()
            if part.pending:
                keep = min(keep, part.pending[0][1])
            rows.trim(keep - self.lookback)

    def _render(self, part: Partition, events: list, tup: Tuple | None, result: StepResult) -> None:
        """Render the matcher's ``events`` (after those still waiting) into ``result``."""
        rows = part.rows
        pending = part.pending
        if events:
            pending.extend(events)
        while pending:
            event = pending[0]
            try:
                rendered = self.builder.render(event, rows, part.values)
            except Blocked:
                break
            except BQLError as err:
                rendered = []
                result.dropped.append(Dropped(tup or rows.get(event[1]), f"MATCH_RECOGNIZE: {err}"))
            pending.popleft()
            if event[0] == "error":
                result.dropped.append(Dropped(tup or rows.get(event[1]), f"MATCH_RECOGNIZE: {event[5]}"))
            for row, ts in rendered:
                self._emit(row, ts, result, tup)

    def _emit(self, row: dict, ts: Any, result: StepResult, tup: Tuple | None) -> None:
        if self.star_only:  # SELECT RSTREAM * without WHERE: the row itself
            result.outputs.append(Tuple(dict(row), ts, tup.seq if tup is not None else 0, ""))
            return
        env = Env({self.out_alias: Tuple(row, ts)})
        try:
            if self.where is not None and self.where(env) is not True:
                return
            data = self.select_list.evaluate(env)
        except BQLError as err:
            result.dropped.append(Dropped(Tuple(row, ts), f"MATCH_RECOGNIZE output: {err}", "output"))
            return
        result.outputs.append(Tuple(data, ts, tup.seq if tup is not None else 0, ""))
