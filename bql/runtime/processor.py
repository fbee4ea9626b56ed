"""The per-tuple processing contract shared by every query kernel (BQL SELECT, MATCH_RECOGNIZE,
Timeplus windows) and the runtime that hosts them (in-process for tests, inside a Spark stateful
operator in a running topology).

A processor is fed one tuple at a time in arrival order and answers with the tuples it emits, in
emission order. Its whole state can be snapshotted to bytes and restored (Spark keeps the bytes in its
state store, so a restarted query resumes exactly).
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(slots=True)
class Tuple:
    """One stream tuple: ``data`` is a BQL map (dict), ``ts`` its timestamp (aware UTC datetime, µs).

    ``seq`` is the arrival sequence number assigned by the runtime (a topology-wide counter) and
    ``input`` the name of the FROM input it arrived on (set by the runtime before ``process``).
    """

    data: dict[str, Any]
    ts: _dt.datetime
    seq: int = 0
    input: str = ""


@dataclass(slots=True)
class Dropped:
    """A tuple whose step failed: reported on ``dropped_tuples`` and counted in node status."""

    tuple: Tuple
    error: str
    event_type: str = "other"  # "input" | "output" | "other" (SensorBee's dropped_tuples field)


@dataclass(slots=True, init=False)
class StepResult:
    """What one ``process`` call produced: emitted tuples (in order) and dropped steps.

    Its ``__init__`` is written out: the generated one of ``field(default_factory=list)`` costs 250 ns a
    result against 110 (one result per tuple of every kernel)."""

    outputs: list[Tuple]
    dropped: list[Dropped]
    done: bool  # the query finished (e.g. LIMIT reached): its node stops

    def __init__(self, outputs: list[Tuple] | None = None, dropped: list[Dropped] | None = None,
                 done: bool = False):
        self.outputs = [] if outputs is None else outputs
        self.dropped = [] if dropped is None else dropped
        self.done = done


class _NoRows(list):
    """An empty list that cannot be changed (the lists of ``NOTHING``)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("the shared empty StepResult (NOTHING) cannot be changed")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


def _nothing() -> StepResult:
    cls = type("NoStep", (StepResult,), {"__slots__": (), "__setattr__": _NoRows._refuse})
    out = object.__new__(cls)
    object.__setattr__(out, "outputs", _NoRows())
    object.__setattr__(out, "dropped", _NoRows())
    object.__setattr__(out, "done", False)
    return out


NOTHING = _nothing()
"""A shared ``StepResult`` with no outputs and no drops that cannot be changed: what a step returns when
a tuple produced nothing (most tuples of a window or a pattern), instead of a new empty result."""


class Processor(Protocol):
    """A compiled query over its inputs (FROM aliases/stream names)."""

    inputs: tuple[str, ...]  # the input node names this processor reads, in FROM order

    def process(self, tup: Tuple) -> StepResult:
        """Handle one arriving tuple (``tup.input`` names the input node)."""

    def finish(self, input_name: str) -> StepResult:
        """Input ``input_name`` has ended for good (a finite source stopped)."""

    def tick(self, now: _dt.datetime) -> StepResult:
        """Wall-clock tick (EMIT PERIODIC); processors without timers return an empty result."""

    def next_tick(self) -> _dt.datetime | None:
        """When ``tick`` should next be called (a past time: at once); None = no tick wanted now.

        Optional: a processor without it never needs ticks (read it with ``next_tick_of``). The
        runtime calls ``tick(now)`` only when ``now >= next_tick()``.
        """

    def tick_period(self) -> _dt.timedelta | None:
        """The wall-clock period of this processor's ticks (EMIT PERIODIC n), None if it has none.

        Optional (read with ``tick_period_of``); known right after building, before any tuple, so the
        runtime can decide when a query starts whether it must wake up on the wall clock.
        """

    def process_batch(self, input_name: str, tuples: list[Tuple]) -> list[Any]:
        """``process`` for each of ``tuples`` (all of input ``input_name``, in arrival order): one entry per
        tuple, which is

        - ``None``: nothing emitted, nothing dropped;
        - a ``dict``: one output row, stamped with the tuple's ``ts`` and ``seq``;
        - a ``list`` of dicts: output rows, in order, each stamped with the tuple's ``ts`` and ``seq``;
        - a ``StepResult``: the step's result as ``process`` returns it;
        - an ``Exception``: ``process`` raised it (the host reports it as it reports a raising ``process``).

        The list is shorter than the batch only when its last entry is a ``StepResult`` with ``done``: the
        processor finished there and did not take the rest. An output row may share maps and arrays with
        its tuple's (hosts encode the rows or hand them on unchanged, as they share a tuple among its
        consumers). It never raises. Optional: hosts call what ``batch_entry`` gives."""

    def batch_entry(self) -> Any:
        """``process_batch`` when a batch costs this processor less than its tuples one by one, else None
        (hosts then call ``process`` per tuple; ``each_of`` is the one-by-one form of a batch). Optional
        (read it with ``batch_entry_of``); known right after building."""

    def mixed_entry(self) -> Any:
        """``process_mixed(tuples)``: ``process_batch`` over tuples of any inputs (each ``Tuple.input``), in
        arrival order, with the same answers — when a batch of interleaved inputs costs this processor less
        than its runs of one input, else None. Optional (read it with ``mixed_entry_of``)."""

    def snapshot(self) -> bytes:
        """All state as bytes (pickle of plain values is fine)."""

    def restore(self, data: bytes) -> None:
        """Replace all state with a snapshot taken by the same compiled query."""


def next_tick_of(proc: Any) -> _dt.datetime | None:
    """``proc.next_tick()``, or None for a processor that does not define it (the protocol default)."""
    fn = getattr(proc, "next_tick", None)
    return fn() if fn is not None else None


def stamped(rows: list[dict[str, Any]], tup: Tuple) -> list[Tuple]:
    """``rows`` as output ``Tuple``s carrying ``tup``'s time and seq: ``process``' form of the output maps a
    step answers in ``process_batch``."""
    ts, seq = tup.ts, tup.seq
    return [Tuple(data, ts, seq, "") for data in rows]


def batch_entry_of(proc: Any) -> Any:
    """``proc.batch_entry()``, or None for a processor that does not define it (the protocol default)."""
    fn = getattr(proc, "batch_entry", None)
    return fn() if fn is not None else None


def mixed_entry_of(proc: Any) -> Any:
    """``proc.mixed_entry()``, or None for a processor that does not define it (the protocol default)."""
    fn = getattr(proc, "mixed_entry", None)
    return fn() if fn is not None else None


def each_of(proc: Any, tuples: list[Tuple]) -> list[Any]:
    """``process_batch``'s entries of ``proc.process`` called on each tuple: the batch entry of a processor
    (or of part of a batch) without a cheaper way."""
    out: list[Any] = []
    for tup in tuples:
        try:
            result = proc.process(tup)
        except Exception as exc:  # the host reports it as a raising ``process``
            out.append(exc)
            continue
        if result is NOTHING:
            out.append(None)
            continue
        out.append(result)
        if result.done:
            break
    return out


def tick_period_of(proc: Any) -> _dt.timedelta | None:
    """``proc.tick_period()``, or None for a processor that does not define it (the protocol default)."""
    fn = getattr(proc, "tick_period", None)
    return fn() if fn is not None else None


@dataclass(slots=True)
class ProcessorContext:
    """What a processor may need from its topology when it is built.

    ``functions``: the function registry (None = built-ins only); ``udsfs``: the UDSF registry;
    ``states``: the topology's UDS lookup (``states.get(name)``); ``topology``: its name.
    ``kernel``: which BQL SELECT kernel ``build_processor`` may use — ``"auto"`` (the incremental
    kernel where it is exact, else the reference) or ``"reference"`` (always ``SelectProcessor``; the
    environment variable ``SBPY_KERNEL=reference`` does the same).
    """

    functions: Any = None
    udsfs: Any = None
    states: Any = None
    topology: str = ""
    kernel: str = "auto"
