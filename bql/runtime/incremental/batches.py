"""``process_batch`` of the incremental kernel (``Processor.batch_entry``): a run of one input's tuples
in one call, for the statement shapes whose step has a batch form.

- the fast form (RSTREAM over ``[RANGE 1 TUPLES]``): its generated list comprehension over the batch
  (``batch_codegen``) — over chunks of ``BATCH_CHUNK`` tuples when it refuses a row (one outside its
  guards), and a chunk it refuses one tuple at a time through ``process``;
- one-FROM-item RSTREAM GROUP BY (``GroupedStep.advance_rows``) and a hash join of two FROM items for an
  input read by one of its FROM items (``PairedStep.advance_rows``): their generated steps answering each
  tuple's output maps, a raise dropping only its step (``_steps_batch``);
- one-FROM-item ISTREAM/DSTREAM's fused step (``DeltaStep.advance_rows``), which hands a step it does not
  cover back to the general path (``_rows_batch``).

Each answer is what ``process`` gives for the tuple (the contract in ``runtime/processor.py``); the
general path (``process``) runs whatever the forms do not cover — while a row waits for its key or
projection, or the processor runs as the reference kernel. ``BatchSteps`` is a mixin of
``IncrementalSelectProcessor``, whose attributes (``batch``, ``grouped``, ``paired``, ``delta_step``,
``source``, ``targets``, ``relation``, ``delegate``, ``emitted``) it reads.
"""
from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from operator import attrgetter
from typing import Any

from ..kernel import _message
from ..processor import Dropped, StepResult, Tuple, each_of

BATCH_CHUNK = 512  # a batch with a row the generated comprehension refuses runs by chunks of this many
_INPUT = attrgetter("input")


class BatchSteps:
    """``batch_entry`` / ``process_batch`` of ``IncrementalSelectProcessor`` (see the module doc)."""

    batch: Any
    grouped: Any
    paired: Any
    delta_step: Any
    source: str
    targets: dict[str, list[int]]
    relation: Any
    delegate: bool
    emitted: int

    def batch_entry(self) -> Any:
        """``process_batch`` for the fast form, a one-FROM-item RSTREAM GROUP BY, a one-FROM-item
        ISTREAM/DSTREAM on its fused step and a hash join of two FROM items on its paired step, else None."""
        offered = (self.batch is not None or self.grouped is not None or self.delta_step is not None
                   or self.paired is not None)
        return self.process_batch if offered else None

    def process_batch(self, input_name: str, tuples: list[Tuple]) -> list[Any]:
        """``process`` over a batch of one input (``Processor.process_batch``'s entries): the fast form
        runs its generated comprehension over the batch — over chunks of ``BATCH_CHUNK`` tuples when it
        refuses a row (one outside its guards), and a chunk it refuses one tuple at a time —; a one-FROM-item
        RSTREAM GROUP BY answers each tuple's output maps (``GroupedStep.advance_rows``: no ``StepResult``
        and no output ``Tuple``s), so do a one-FROM-item ISTREAM/DSTREAM's fused step
        (``DeltaStep.advance_rows``) and a join's paired step (``PairedStep.advance_rows``, for an input
        read by one of its FROM items); anything else one by one."""
        if self.batch is not None or self.grouped is not None or self.delta_step is not None:
            if input_name != self.source:
                return [None] * len(tuples)
            if self.batch is not None:
                return self._generated_batch(tuples)
            if self.grouped is not None:
                advance = self.grouped.advance_rows
                return self._light_batch(tuples, self.grouped.light,
                                         lambda some: self._steps_batch(some, advance, None), None)
            return self._rows_batch(tuples, self._delta_rows)
        if self.paired is not None:
            targets = self.targets.get(input_name)
            if targets is None:
                return [None] * len(tuples)
            if len(targets) == 1:
                k, advance = targets[0], self.paired.advance_rows
                return self._light_batch(tuples, self.paired.light,
                                         lambda some: self._steps_batch(some, advance, k), k)
        return each_of(self, tuples)

    def _generated_batch(self, tuples: list[Tuple]) -> list[Any]:
        batch = self.batch
        try:
            return batch(tuples)
        except Exception:  # side-effect free: again by chunks, a chunk it refuses one row at a time
            pass
        out: list[Any] = []
        for start in range(0, len(tuples), BATCH_CHUNK):
            chunk = tuples[start:start + BATCH_CHUNK]
            try:
                out += batch(chunk)
            except Exception:
                done = each_of(self, chunk)
                out += done
                if len(done) < len(chunk):  # the processor finished (the contract's short list)
                    break
        return out

    def mixed_entry(self) -> Any:
        """``process_mixed`` for an ISTREAM join whose light loop takes both inputs (``pair_batch``), else
        None (``Processor.mixed_entry``)."""
        paired = self.paired
        if paired is None or paired.light is None or not paired.light.mixes:
            return None
        return self.process_mixed

    def process_mixed(self, tuples: list[Tuple]) -> list[Any]:
        """``process`` over tuples of any inputs, each of its own (``Tuple.input``), in arrival order: the
        join's light loop over both inputs, the rest by runs of one input (``process_batch``)."""
        return self._light_batch(tuples, self.paired.light, self._by_runs, None)

    def _by_runs(self, tuples: list[Tuple]) -> list[Any]:
        out: list[Any] = []
        for name, run in groupby(tuples, _INPUT):
            out += self.process_batch(name, list(run))
        return out

    def _light_batch(self, tuples: list[Tuple], light: Any, general: Callable[[list[Tuple]], list[Any]],
                     k: int | None) -> list[Any]:
        """A batch of a one-FROM-item GROUP BY (``group_batch``), of one FROM item ``k`` of an ISTREAM
        join or of both its inputs (``pair_batch``, ``k`` None): runs of its light loop where the statement
        and the batch's length allow one; the tuple a run stops at (or a general state the loop cannot load)
        takes the ``general`` path (the generated step), and so do as many tuples after it as the window then
        holds — what stopped the loop may stay in the window that long — before the next run."""
        out: list[Any] = []
        start, n = 0, len(tuples)
        while light is not None and start < n and light.takes(n - start):
            ran = light.run(tuples, start, k)
            if ran is not None:
                answers, taken = ran
                if taken < 0:  # the loop raised: the generated step takes the rest
                    break
                out += answers
                start += taken
                if start == n:
                    break
            out += general(tuples[start:start + 1])
            start += 1
            then = min(n, start + light.gap(k))
            out += general(tuples[start:then])
            start = then
        if start < n:
            out += general(tuples[start:] if start else tuples)
        return out

    def _steps_batch(self, tuples: list[Tuple], advance: Callable[..., list[dict]], k: int | None) -> list[Any]:
        """Per tuple the output maps of a generated step that raises where the general step fails —
        ``GroupedStep.advance_rows(tup)``, or ``PairedStep.advance_rows(tup, k)`` for FROM item ``k`` —,
        its drop when it raises, or, while a row waits for its key or projection (or the processor runs as
        the reference), what ``process`` answers (no LIMIT: never the contract's short list)."""
        out: list[Any] = []
        append = out.append
        for tup in tuples:
            if self.delegate or self.relation.pending:
                append(each_of(self, [tup])[0])
                continue
            try:
                rows = advance(tup) if k is None else advance(tup, k)
            except Exception as err:  # as ``process``: only this step is lost
                append(StepResult([], [Dropped(tup, _message(err), "other")]))
                continue
            self.emitted += len(rows)
            append(rows or None)
        return out

    def _delta_rows(self, tup: Tuple) -> list[dict] | None:
        """``tup``'s output maps from the fused ISTREAM/DSTREAM step, or None (the general step)."""
        return None if self.delegate else self.delta_step.advance_rows(tup)

    def _rows_batch(self, tuples: list[Tuple], step: Callable[[Tuple], Any]) -> list[Any]:
        """Per tuple what ``step`` answers: its output maps, a drop, or None — then ``process`` takes it."""
        out: list[Any] = []
        append = out.append
        for tup in tuples:
            answer = step(tup)
            if answer is None:
                (entry,) = each_of(self, [tup])
                append(entry)
                if type(entry) is StepResult and entry.done:  # the contract's short list
                    break
            elif type(answer) is list:
                self.emitted += len(answer)
                append(answer or None)
            else:
                append(answer)
        return out
