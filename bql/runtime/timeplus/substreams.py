"""``PARTITION BY e, ...``: a Timeplus query run once per substream (docs/timeplus.md).

Proton's ``PARTITION BY`` splits the input into substreams, one per value of the keys, and runs the
query in each on its own: every substream has its own windows, watermark (so a tuple is late only with
respect to the tuples of its own substream), sessions, groups, ``lag`` history and ``emit_version()``
counter. ``SubstreamProcessor`` keeps one ``WindowProcessor`` per key value, built from the query
without its PARTITION BY, LIMIT and OFFSET; those two apply to the merged output.

- The keys are evaluated on each input tuple before WHERE (a tuple WHERE drops still moves its
  substream's watermark); a tuple whose keys fail to evaluate is dropped with the error. Keys compare
  as GROUP BY keys do (``values.multiset_key``: ``1`` and ``1.0`` are one substream).
- A tuple goes to its substream only; its outputs follow at once. A wall-clock tick and the end of
  input visit the substreams in the order they first appeared, so the rows of one PERIODIC emission
  or of the final flush come substream by substream.
- ``LIMIT n [OFFSET m]`` counts the rows of all substreams together and stops the whole query.
- Everything is in the snapshot: the substreams in order, each one's own snapshot, the LIMIT counts.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import pickle
from collections.abc import Callable
from typing import Any

from ...ast import Select
from ...eval import Env, Scope, compile_expr
from ...values import multiset_key
from ..kernel import _message
from ..processor import Dropped, ProcessorContext, StepResult, Tuple
from .limited_output import LimitedOutput
from .processor import WindowProcessor
from .timecol import utc_now


class SubstreamProcessor:
    """The ``Processor`` of a Timeplus query with ``PARTITION BY``: one ``WindowProcessor`` per key."""

    def __init__(self, select: Select, context: ProcessorContext | None = None):
        self.context = context or ProcessorContext()
        self.inner = dataclasses.replace(select, partition_by=(), limit=None, offset=None)
        self.probe = WindowProcessor(self.inner, self.context)  # the query's shape; never fed
        self.inputs = self.probe.inputs
        self.alias = self.probe.alias
        scope = Scope((self.alias,), registry=self.context.functions)
        self.keys = [compile_expr(e, scope) for e in select.partition_by]
        self.out = LimitedOutput(select.limit, select.offset)
        self.clock: Callable[[], _dt.datetime] = utc_now
        self.parts: dict[tuple, WindowProcessor] = {}  # in order of first appearance
        self.finished = False

    @property
    def done(self) -> bool:
        """LIMIT reached over the merged rows: the query produces nothing more."""
        return self.out.done

    # ------------------------------------------------------------ substreams

    def _part(self, key: tuple) -> WindowProcessor:
        part = self.parts.get(key)
        if part is None:
            part = self.parts[key] = WindowProcessor(self.inner, self.context)
        part.clock = self.clock
        return part

    def _merge(self, step: StepResult, result: StepResult) -> None:
        result.dropped.extend(step.dropped)
        for out in step.outputs:
            if self.out.done:
                return
            if self.out.admit():
                result.outputs.append(out)

    def _each(self, call: Callable[[WindowProcessor], StepResult]) -> StepResult:
        result = StepResult()
        for key in list(self.parts):
            if self.done:
                break
            self._merge(call(self._part(key)), result)
        result.done = self.done
        return result

    # ------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        result = StepResult()
        if self.done or self.finished:
            result.done = self.done
            return result
        try:
            env = Env({self.alias: tup}, None, self.clock())
            key = tuple(multiset_key(fn(env)) for fn in self.keys)
        except Exception as err:  # per-tuple isolation, as in WindowProcessor.process
            result.dropped.append(Dropped(tup, _message(err), "other"))
            return result
        self._merge(self._part(key).process(tup), result)
        result.done = self.done
        return result

    def finish(self, input_name: str) -> StepResult:
        if self.finished or self.done:
            return StepResult(done=self.done)
        self.finished = True
        return self._each(lambda part: part.finish(input_name))

    def tick(self, now: _dt.datetime) -> StepResult:
        if self.finished or self.done:
            return StepResult(done=self.done)
        return self._each(lambda part: part.tick(now))

    def next_tick(self) -> _dt.datetime | None:
        if self.finished or self.done:
            return None
        due = [t for t in (self._part(k).next_tick() for k in self.parts) if t is not None]
        return min(due) if due else None

    def tick_period(self) -> _dt.timedelta | None:
        return self.probe.tick_period()

    # ------------------------------------------------------------ snapshot / restore

    def snapshot(self) -> bytes:
        state = {
            "parts": [(key, part.snapshot()) for key, part in self.parts.items()],
            **self.out.state(),
            "finished": self.finished,
        }
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        state: dict[str, Any] = pickle.loads(data)
        self.parts = {}
        for key, snap in state["parts"]:
            self._part(key).restore(snap)
        self.out.load(state)
        self.finished = state["finished"]
