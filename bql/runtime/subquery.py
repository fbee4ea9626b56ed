"""Subqueries in FROM (and CTEs, which desugar to them): a SELECT whose FROM items include
``(select) [RANGE ...] AS t`` — or ``(select) MATCH_RECOGNIZE (...)`` and ``tumble((select), ...)`` (also
written with a CTE), which read such a subquery without a window — runs as a small chain of processors
inside one stage.

Each subquery gets its own processor (``build_processor``, so it may itself be a Timeplus aggregation,
a MATCH_RECOGNIZE or hold subqueries); the outer SELECT is built with every subquery item replaced by a
stream reference ``(t#i) [RANGE ...] AS t`` whose name no node can have, and reads the subquery's
output tuples under that name. The result is exactly the one of the explicit chain
``CREATE STREAM t AS select; ... FROM t [RANGE ...] AS t`` in a topology, whose consumer query fuses
the two streams into one ``Pipeline`` (``bql/spark/operator.py``) that delivers depth-first, upstream
stages first:

- an arriving tuple goes to every processor that reads its input, the subqueries first (in FROM
  order), then the outer SELECT; what a subquery emits is delivered at once, before the next
  processor sees the arriving tuple — so the outer SELECT sees what a subquery derived from a source
  tuple before that source tuple itself, as the fused pipeline does;
- a subquery's output ends when all its inputs have ended (``finish``); ticks go to every processor;
- dropped steps of every processor are reported; the chain is done when the outer SELECT is.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import pickle
from collections import deque
from typing import Any

from ..ast import MatchRecognize, Select, StreamRef, SubqueryRef, WindowFunction
from .processor import ProcessorContext, StepResult, Tuple, next_tick_of, tick_period_of


def has_subquery(select: Select) -> bool:
    """Whether a FROM item of ``select`` is a subquery or a MATCH_RECOGNIZE over one."""
    return any(isinstance(_source(item), SubqueryRef) for item in select.from_items)


def _source(item: Any) -> Any:
    """The item a FROM item reads tuples of: a MATCH_RECOGNIZE's input, a window function's subquery,
    else the item itself."""
    if isinstance(item, MatchRecognize):
        return item.input
    if isinstance(item, WindowFunction) and item.source is not None:
        return item.source
    return item


def _reading(item: Any, source: SubqueryRef, ref: StreamRef) -> Any:
    """``item`` reading the stream ``ref`` instead of its subquery ``source``."""
    if item is source:
        return ref
    if isinstance(item, WindowFunction):
        return dataclasses.replace(item, stream=ref.name, source=None)
    return dataclasses.replace(item, input=ref)


class SubqueryProcessor:
    """The processor of a SELECT reading subqueries (see the module docstring)."""

    def __init__(self, select: Select, context: ProcessorContext | None = None):
        from . import build_processor

        context = context or ProcessorContext()
        self.inner: list[tuple[str, Any]] = []  # (internal stream name, processor), FROM order
        items = []
        for i, item in enumerate(select.from_items):
            source = _source(item)
            if isinstance(source, SubqueryRef):
                name = f"({source.alias}#{i})"
                self.inner.append((name, build_processor(source.select, context)))
                ref = StreamRef(name, source.window, source.alias, span=source.span)
                items.append(_reading(item, source, ref))
            else:
                items.append(item)
        self.outer = build_processor(dataclasses.replace(select, from_items=tuple(items)), context)
        internal = {name for name, _ in self.inner}
        names = [n for _, p in self.inner for n in p.inputs] + list(self.outer.inputs)
        self.inputs: tuple[str, ...] = tuple(dict.fromkeys(n for n in names if n not in internal))
        self.ended: set[str] = set()
        self.done = False

    # ------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        result = StepResult()
        if not self.done:
            self._route([tup], result)
        result.done = self.done
        return result

    def finish(self, input_name: str) -> StepResult:
        result = StepResult()
        pending = deque([input_name])
        self.ended.add(input_name)
        while pending and not self.done:
            name = pending.popleft()
            for inner_name, proc in self.inner:
                if name not in proc.inputs:
                    continue
                self._take(proc.finish(name), inner_name, result)
                if inner_name not in self.ended and all(i in self.ended for i in proc.inputs):
                    self.ended.add(inner_name)
                    pending.append(inner_name)
            if name in self.outer.inputs and not self.done:
                self._outer_step(self.outer.finish(name), result)
        result.done = self.done
        return result

    def tick(self, now: _dt.datetime) -> StepResult:
        result = StepResult()
        for inner_name, proc in self.inner:
            if not self.done and next_tick_of(proc) is not None:
                self._take(proc.tick(now), inner_name, result)
        if not self.done and next_tick_of(self.outer) is not None:
            self._outer_step(self.outer.tick(now), result)
        result.done = self.done
        return result

    def next_tick(self) -> _dt.datetime | None:
        ticks = [t for t in (next_tick_of(p) for p in self._processors()) if t is not None]
        return min(ticks) if ticks else None

    def tick_period(self) -> _dt.timedelta | None:
        periods = [t for t in (tick_period_of(p) for p in self._processors()) if t is not None]
        return min(periods) if periods else None

    def snapshot(self) -> bytes:
        state = {"stages": [p.snapshot() for p in self._processors()], "ended": sorted(self.ended),
                 "done": self.done}
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        state = pickle.loads(data)
        for proc, snap in zip(self._processors(), state["stages"]):
            proc.restore(snap)
        self.ended = set(state["ended"])
        self.done = state["done"]

    # ------------------------------------------------------------ routing

    def _processors(self) -> list[Any]:
        return [p for _, p in self.inner] + [self.outer]

    def _route(self, tuples: list[Tuple], result: StepResult) -> None:
        """Deliver tuples in order, each depth-first (what a subquery emits before the next reader)."""
        for tup in tuples:
            for inner_name, proc in self.inner:
                if tup.input in proc.inputs and not self.done:
                    self._take(proc.process(tup), inner_name, result)
            if tup.input in self.outer.inputs and not self.done:
                self._outer_step(self.outer.process(tup), result)

    def _take(self, step: StepResult, name: str, result: StepResult) -> None:
        """A subquery's step: its drops are reported, its outputs are delivered as tuples of ``name``."""
        result.dropped.extend(step.dropped)
        for out in step.outputs:
            out.input = name
        self._route(step.outputs, result)

    def _outer_step(self, step: StepResult, result: StepResult) -> None:
        result.outputs.extend(step.outputs)
        result.dropped.extend(step.dropped)
        if step.done:
            self.done = True
