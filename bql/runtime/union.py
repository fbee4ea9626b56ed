"""``SELECT ... UNION ALL SELECT ...``: several branch processors behind one processor.

Each arriving tuple is fed to every branch that reads its input; the outputs are concatenated in branch
order (UNION ALL keeps duplicates). The union is done when every branch is done.
"""
from __future__ import annotations

import datetime as _dt
import pickle
from collections.abc import Sequence
from typing import Any

from .processor import StepResult, Tuple, next_tick_of, tick_period_of


def _merge(into: StepResult, part: StepResult) -> None:
    into.outputs.extend(part.outputs)
    into.dropped.extend(part.dropped)


class UnionProcessor:
    """Feeds every branch reading a tuple's input; concatenates their results in branch order."""

    def __init__(self, branches: Sequence[Any]):
        self.branches = list(branches)
        self.inputs: tuple[str, ...] = tuple(dict.fromkeys(n for b in self.branches for n in b.inputs))
        self._done = [False] * len(self.branches)

    def _each(self, call, wanted=None) -> StepResult:
        result = StepResult()
        for i, branch in enumerate(self.branches):
            if self._done[i] or (wanted is not None and wanted not in branch.inputs):
                continue
            part = call(branch)
            _merge(result, part)
            if part.done:
                self._done[i] = True
        result.done = all(self._done)
        return result

    def process(self, tup: Tuple) -> StepResult:
        return self._each(lambda b: b.process(tup), tup.input)

    def finish(self, input_name: str) -> StepResult:
        return self._each(lambda b: b.finish(input_name), input_name)

    def tick(self, now: _dt.datetime) -> StepResult:
        return self._each(lambda b: b.tick(now))

    def next_tick(self) -> _dt.datetime | None:
        """The earliest ``next_tick`` of the branches still running (None if none wants a tick)."""
        times = [t for i, b in enumerate(self.branches) if not self._done[i]
                 for t in (next_tick_of(b),) if t is not None]
        return min(times) if times else None

    def tick_period(self) -> _dt.timedelta | None:
        """The shortest tick period of the branches (None if no branch ticks)."""
        periods = [p for p in map(tick_period_of, self.branches) if p is not None]
        return min(periods) if periods else None

    def snapshot(self) -> bytes:
        return pickle.dumps(([b.snapshot() for b in self.branches], self._done))

    def restore(self, data: bytes) -> None:
        states, done = pickle.loads(data)
        for branch, state in zip(self.branches, states):
            branch.restore(state)
        self._done = list(done)
