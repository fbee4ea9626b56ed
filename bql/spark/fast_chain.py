"""A ``Pipeline`` with a direct path for linear chains of memoryless SELECT stages.

A stateless plan's chain is a path ``input → s1 → s2 → … → sk`` where every stage is the kernel's fast
form (``RSTREAM`` over ``[RANGE 1 TUPLES]`` of one input, WHERE and a select list, no LIMIT). For such
a chain ``FastPipeline.run`` does per journal row only what the generic path does, in the same order:
decode (``Pipeline.run``), then per stage WHERE and the select list, then encode the last stage's row — without the
``StepResult``/emitter/``Tuple`` plumbing between stages. A stage whose WHERE and select list fit
``stage_codegen``'s subset runs its generated, type-guarded function first; a row it does not cover
(``FALLBACK``) takes the kernel's compiled closures for that stage. Counters, dropped rows (the same node, error
text, event and tuple), end handling and stat rows are the ``Pipeline``'s own, so the rows equal the
generic path's (``tests/spark/test_fast_chain.py`` checks this against ``Pipeline`` on random rows).

``fast_stages`` says whether a list of built processors qualifies; otherwise use ``Pipeline``.
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

from sbpy.bql.eval import Env
from sbpy.bql.runtime.kernel import SelectProcessor, _message, truth
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.stage_codegen import FALLBACK, generate_for, leaf_scope

from .operator import Pipeline

_UTC = _dt.timezone.utc
_now = _dt.datetime.now


def fast_stages(pipeline: Pipeline) -> bool:
    """Whether ``pipeline``'s stages form a path of fast memoryless SELECTs over one journal input."""
    names = [s.node for s in pipeline.stages]
    for k, (spec, proc) in enumerate(zip(pipeline.stages, pipeline.processors)):
        if not isinstance(proc, SelectProcessor) or not proc.fast or proc.limit is not None:
            return False
        if len(spec.inputs) != 1 or any(pipeline.buffers[k].values()):
            return False
        if k > 0 and spec.inputs[0] != names[k - 1]:
            return False
        if spec.inputs[0] in names[k:]:
            return False
    return bool(names) and pipeline.stages[0].inputs[0] not in names


def make_pipeline(stages: Iterable[Any], topology: str = "", context: Any = None) -> Pipeline:
    """A ``FastPipeline`` when the stages qualify (``fast_stages``), else a ``Pipeline``."""
    stages = list(stages)
    pipeline = Pipeline(stages, topology, context)
    return FastPipeline(stages, topology, context) if fast_stages(pipeline) else pipeline


class FastPipeline(Pipeline):
    """``Pipeline`` whose data rows take the direct path (see the module docstring)."""

    def __init__(self, stages: Iterable[Any], topology: str = "", context: Any = None):
        super().__init__(stages, topology, context)
        self.input = self.stages[0].inputs[0]
        # each stage's generated step; an expression outside its subset is a closure leaf (never a volatile
        # one such as now(), whose value the kernel's path below takes at the tuple's own time)
        self.steps = [(k, spec.node, proc.aliases[0], proc.where, proc.select_list.evaluate,
                       generate_for(proc, None, leaf_scope(proc)))
                      for k, (spec, proc) in enumerate(zip(self.stages, self.processors))]

    def _deliver_data(self, name: str, data: Any, ts_us: int, seq: int) -> None:
        """A journal row of the chain's input takes the direct path."""
        if name == self.input:
            self._chain(data, ts_us, seq, name)

    def _chain(self, data: Any, ts_us: int, seq: int, name: str) -> None:
        ts = None  # the tuple's datetime, made only when a stage needs the kernel
        for k, node, alias, where, select, generated in self.steps:
            if k in self.ended:
                return
            stat = self._stat(k)
            stat.received[name] = stat.received.get(name, 0) + 1
            if generated is not None:
                out = generated(data)
                if out is None:
                    return
                if out is not FALLBACK:
                    data, name = out, node
                    stat.sent += 1
                    continue
            if ts is None:
                ts = self._times.get(ts_us)
            tup = Tuple(data, ts, seq, name)
            try:
                env = Env({alias: tup}, None, _now(_UTC))
                if where is not None and not truth(where(env), "WHERE"):
                    return
                data = select(env)
            except Exception as err:  # the step is dropped alone, as the kernel's ``_step`` does
                stat.dropped += 1
                self._emit_dropped(node, tup, _message(err), name, "other")
                return
            stat.sent += 1
            name = node
        self._emit_data(name, data, ts_us)
