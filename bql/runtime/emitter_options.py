"""SensorBee's emitter options around any SELECT processor (``bql_box.go`` ``Process``/``timeEmitter``).

``SELECT RSTREAM [EVERY 2-ND TUPLE LIMIT 3] ...`` applies the options to the tuples the query itself
would emit, one by one, in emission order:

- ``EVERY k-TH TUPLE``: a counter over every output tuple (from all steps, starting at 0) lets through
  the tuples whose count is a multiple of k — the 1st, (k+1)-th, (2k+1)-th, ...
- ``SAMPLE x%``: each output tuple independently when ``rng.random() < x / 100`` (Go's
  ``rand.Float64() < p``); ``rng`` is injectable so a seeded generator gives a reproducible subset.
- ``EVERY x SECONDS|MILLISECONDS``: nothing is emitted while processing; the latest output tuple is kept
  and a wall-clock ticker of period x emits it (once) at each tick. SensorBee's ticker starts when the
  box starts: here the first ``tick(now)`` (``next_tick`` asks for it at once) starts the clock, and a
  late tick emits once, like Go's ticker, which drops missed ticks.
- ``LIMIT n``: after the n-th emitted tuple the rest of the step's tuples are discarded and the query is
  done (SensorBee removes the box). Once the limit is reached, arriving tuples are not processed. With
  ``LIMIT 0`` nothing is ever processed or emitted, yet SensorBee never removes the box (its removal
  runs only after a step that emitted), so the query is not done either.

The wrapped processor's dropped tuples pass through unchanged (they are not output tuples).
"""
from __future__ import annotations

import datetime as _dt
import pickle
import random
from typing import Any

from ..analyzer.emitters import emitter_option_value
from ..ast import EmitterOption
from .processor import StepResult, Tuple, next_tick_of, tick_period_of

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


class EmitterOptionsProcessor:
    """Wraps ``inner`` (the processor of the same SELECT without options) and applies ``options``."""

    def __init__(self, inner: Any, options: tuple[EmitterOption, ...], rng: random.Random | None = None):
        self.inner = inner
        self.inputs: tuple[str, ...] = inner.inputs
        self.limit: int | None = None
        self.sampling: str | None = None  # "every_tuple" | "sample" | "every_time"
        self.sampling_value = 0.0  # k, the probability in [0, 1], or the period in seconds
        for option in options:
            if option.kind == "limit":
                self.limit = int(option.value)
            else:
                self.sampling = option.kind
                value = emitter_option_value(option)
                self.sampling_value = value / 100 if option.kind == "sample" else value
        self.rng = rng if rng is not None else random.Random()
        self.generated = 0  # output tuples seen by EVERY k-TH TUPLE
        self.emitted = 0  # tuples written, counted against LIMIT
        self.last: Tuple | None = None  # EVERY x SECONDS: the latest output tuple not yet emitted
        self.next_due: _dt.datetime | None = None  # EVERY x SECONDS: the ticker's next tick
        self.inner_done = False

    # ------------------------------------------------------------------ state

    def _limit_reached(self) -> bool:
        return self.limit is not None and self.emitted >= self.limit

    @property
    def done(self) -> bool:
        """Finished: the LIMIT (n > 0) was reached, or the query ended with nothing left to emit."""
        if self._limit_reached() and self.limit:
            return True
        return self.inner_done and self.last is None

    def _period(self) -> _dt.timedelta:
        return _dt.timedelta(seconds=self.sampling_value)

    # ------------------------------------------------------------------ the option filter

    def _apply(self, part: StepResult) -> StepResult:
        result = StepResult(dropped=list(part.dropped))
        self.inner_done = self.inner_done or part.done
        for out in part.outputs:
            if self.sampling == "every_time":
                self.last = out
                continue
            if self.sampling == "every_tuple":
                write = self.generated % int(self.sampling_value) == 0
                self.generated += 1
            elif self.sampling == "sample":
                write = self.rng.random() < self.sampling_value
            else:
                write = True
            if write:
                result.outputs.append(out)
                self.emitted += 1
            if self._limit_reached():
                break
        result.done = self.done
        return result

    def _step(self, call) -> StepResult:
        if self._limit_reached() or self.inner_done:
            return StepResult(done=self.done)
        return self._apply(call())

    # ------------------------------------------------------------------ Processor protocol

    def process(self, tup: Tuple) -> StepResult:
        return self._step(lambda: self.inner.process(tup))

    def finish(self, input_name: str) -> StepResult:
        return self._step(lambda: self.inner.finish(input_name))

    def tick(self, now: _dt.datetime) -> StepResult:
        result = StepResult()
        if not self._limit_reached() and not self.inner_done and next_tick_of(self.inner) is not None:
            result = self._apply(self.inner.tick(now))
        if self.sampling == "every_time" and not self._limit_reached():
            if self.next_due is None:
                self.next_due = now + self._period()  # the ticker starts
            elif now >= self.next_due:
                periods = (now - self.next_due) // self._period() + 1
                self.next_due += self._period() * periods
                if self.last is not None:
                    result.outputs.append(self.last)
                    self.last = None
                    self.emitted += 1
        result.done = self.done
        return result

    def next_tick(self) -> _dt.datetime | None:
        """The inner query's next tick and, for EVERY x SECONDS, the ticker's (at once before it starts)."""
        if self.done or self._limit_reached():
            return None
        times = [] if self.inner_done else [t for t in (next_tick_of(self.inner),) if t is not None]
        if self.sampling == "every_time":
            times.append(self.next_due if self.next_due is not None else _EPOCH)
        return min(times) if times else None

    def tick_period(self) -> _dt.timedelta | None:
        periods = [p for p in (tick_period_of(self.inner),) if p is not None]
        if self.sampling == "every_time":
            periods.append(self._period())
        return min(periods) if periods else None

    def snapshot(self) -> bytes:
        return pickle.dumps({
            "inner": self.inner.snapshot(), "generated": self.generated, "emitted": self.emitted,
            "last": self.last, "next_due": self.next_due, "inner_done": self.inner_done,
            "rng": self.rng.getstate(),
        })

    def restore(self, data: bytes) -> None:
        state = pickle.loads(data)
        self.inner.restore(state["inner"])
        self.generated, self.emitted = state["generated"], state["emitted"]
        self.last, self.next_due, self.inner_done = state["last"], state["next_due"], state["inner_done"]
        self.rng.setstate(state["rng"])
