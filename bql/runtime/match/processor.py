"""``MatchRecognizeProcessor``: SELECT ... FROM stream MATCH_RECOGNIZE (...) as a per-tuple processor.

Each arriving tuple goes to its partition (PARTITION BY values), through the ORDER BY reorder buffer
(``Rows``) into the matcher; the matches it resolves are rendered (``OutputBuilder``), then the outer
SELECT list and WHERE are applied. Only RSTREAM: the rows a tuple produces are emitted when it arrives.
A match whose measures need a later row (NEXT) waits in the partition's queue until that row arrives
or the input ends. ``finish`` ends every partition (held rows released, ``$`` decided, open matches
finalised as at the end of a table).
"""
from __future__ import annotations

import datetime as _dt
import pickle
from collections import deque
from typing import Any

from ...ast import MatchRecognize, PatternFieldRef, FieldRef
from ...errors import BQLAnalysisError, BQLError
from ...eval import Env, Scope, compile_expr
from ...values import multiset_key
from ..processor import Dropped, ProcessorContext, StepResult, Tuple
from ..projection import SelectList, default_label
from .conditions import RowMasks
from .dfa import Automaton
from .engine import choose
from .exprs import Blocked, MRContext, define_level, max_offsets
from .labels import Replayer
from .matcher import MatchSpec, Matcher
from .output import OutputBuilder
from .partition import Rows
from .program import compile_pattern, program_variables
from .runner import AutomatonMatcher

DEFAULT_REORDER_BOUND = 10


class _Partition:
    __slots__ = ("values", "rows", "matcher", "pending")

    def __init__(self, values: tuple, engine: Any, bound: float):
        self.values = values
        self.rows = Rows(bound)
        self.matcher = engine(self.rows)
        self.pending: deque = deque()


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
        if reorder_bound is None:
            reorder_bound = getattr(context, "match_reorder_bound", None)
        self.bound = DEFAULT_REORDER_BOUND if reorder_bound is None else reorder_bound

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
        use_automaton, self.fallback_reason = choose(mr, program, level, define_exprs, engine)
        if use_automaton:
            masks = RowMasks(sorted(variables), conds, by_var, ctx)
            self.automaton = Automaton(program, masks.bits, masks.always)
            replayer = Replayer(self.automaton)
            spec, auto, mask_at = self.spec, self.automaton, masks.mask_at
            self.engine = lambda rows: AutomatonMatcher(spec, auto, mask_at, replayer, rows)
        else:
            self.automaton = None
            spec = self.spec
            self.engine = lambda rows: Matcher(spec, rows)

        in_scope = Scope((in_alias,), registry)
        self.part_fns = [compile_expr(_plain(e, in_alias), in_scope) for e in mr.partition_by]
        self.order_fns = [compile_expr(_plain(k.expr, in_alias), in_scope) for k in mr.order_by]
        pnames = [default_label(_plain(e, in_alias), i) for i, e in enumerate(mr.partition_by)]
        self.builder = OutputBuilder(measures, pnames, mr.rows_per_match, mr.empty_matches, ctx)

        out_alias = mr.alias or in_alias
        out_scope = Scope((out_alias,), registry)
        self.out_alias = out_alias
        self.select_list = SelectList(select.projections, (out_alias,), lambda e: compile_expr(e, out_scope))
        self.where = compile_expr(select.where, out_scope) if select.where is not None else None
        self.parts: dict[Any, _Partition] = {}

    def engine_description(self) -> str:
        """Which engine matches the pattern, for EXPLAIN: ``deterministic automaton (n states)`` (the
        states built so far; they are built on first use) or ``backtracking matcher: <why>``."""
        if self.automaton is not None:
            return f"deterministic automaton ({len(self.automaton.table)} states)"
        return f"backtracking matcher: {self.fallback_reason}"

    # ------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        result = StepResult()
        env = Env({self.in_alias: tup})
        try:
            pvalues = tuple(f(env) for f in self.part_fns)
            key = tuple(f(env) for f in self.order_fns)
        except BQLError as err:
            result.dropped.append(Dropped(tup, f"MATCH_RECOGNIZE: {err}"))
            return result
        pk = tuple(multiset_key(v) for v in pvalues)
        part = self.parts.get(pk)
        if part is None:
            part = self.parts[pk] = _Partition(pvalues, self.engine, self.bound)
        if not part.rows.offer(tup, key):
            result.dropped.append(Dropped(
                tup, f"MATCH_RECOGNIZE: row arrived later than the ORDER BY reorder bound ({self.bound}) "
                     "allows and was dropped", "input"))
            return result
        self._run(part, tup, result)
        return result

    def finish(self, input_name: str) -> StepResult:
        result = StepResult()
        if input_name.lower() not in self.inputs:
            return result
        for part in self.parts.values():
            part.rows.end()
            self._run(part, None, result)
        return result

    def tick(self, now: _dt.datetime) -> StepResult:
        return StepResult()

    def snapshot(self) -> bytes:
        state = {pk: (p.values, p.rows.to_state(), p.matcher.to_state(), list(p.pending))
                 for pk, p in self.parts.items()}
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        self.parts = {}
        for pk, (values, rows, matcher, pending) in pickle.loads(data).items():
            part = _Partition(values, self.engine, self.bound)
            part.rows.from_state(rows)
            part.matcher.from_state(matcher)
            part.pending = deque(pending)
            self.parts[pk] = part

    # ------------------------------------------------------------ internals

    def _run(self, part: _Partition, tup: Tuple | None, result: StepResult) -> None:
        part.pending.extend(part.matcher.advance())
        rows = part.rows
        pending = part.pending
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
        keep = part.matcher.min_needed()
        if pending:
            keep = min(keep, pending[0][1])
        rows.trim(keep - self.lookback)

    def _emit(self, row: dict, ts: Any, result: StepResult, tup: Tuple | None) -> None:
        env = Env({self.out_alias: Tuple(row, ts)})
        try:
            if self.where is not None and self.where(env) is not True:
                return
            data = self.select_list.evaluate(env)
        except BQLError as err:
            result.dropped.append(Dropped(Tuple(row, ts), f"MATCH_RECOGNIZE output: {err}", "output"))
            return
        result.outputs.append(Tuple(data, ts, tup.seq if tup is not None else 0, ""))
