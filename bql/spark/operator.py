"""The fused stateful operator: a chain of per-tuple processors hosted in one Spark state group
(``state_function``: ``transformWithStateInPandas`` in the logged state layout, ``applyInPandasWithState``
in the snapshot layout; ``state_log``).

A query's pipeline is a list of ``StageSpec(node, bql_text, inputs)`` in topological order; a stage
reads journal inputs and/or earlier stages. Each journal row (sorted by ``seq``) is delivered to every
stage reading its input; a stage's outputs are delivered at once, depth first, to the stages reading
that stage, so per-tuple order is exact across inputs and stages. The last stage's outputs (or, with no
stages, the journal tuples themselves) are the query's ``out`` rows.

Output rows (``OUTPUT_SCHEMA``), in emission order (``idx``):

- ``out``: a tuple of the final stage (``data`` tagged JSON, ``ts`` µs, ``input`` = producing node);
- ``dropped``: a failed step (``node`` = stage, ``error``, ``event`` input/output/other, the tuple's data);
- ``stat``: per active stage, ``data`` = ``{"received": {input: n}, "sent": n, "dropped": n}`` for the batch;
- ``end``: a stage whose inputs all ended (after ``finish``) or that reported ``done``.

Every exception of a tuple step becomes a ``dropped`` row: a bad tuple never fails the batch. All
processor snapshots plus the end flags are pickled into one snapshot (``snapshot``); the snapshot
layout writes it every batch, the logged one as a base plus the journal rows run since.

Wall-clock ticks (EMIT PERIODIC): a stage whose processor has a ``tick_period`` makes the query tick
(``tick_interval_ms``, ``state_function(ticks=True)``): ``Pipeline.tick(now)`` ticks, in stage order,
every stage whose ``next_tick() <= now`` and delivers the outputs downstream like a tuple's; the group's
processing-time timeout wakes the operator at the earliest ``next_tick`` when no data arrives. Queries
without such a stage run without a timeout and without no-data batches.
"""
from __future__ import annotations

import datetime as _dt
import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sbpy.bql.runtime import gc_pause
from sbpy.bql.runtime.processor import StepResult, Tuple, batch_entry_of, mixed_entry_of, next_tick_of

from . import journal_format as jf
from .buffers import Buffer, overflow, stage_buffers
from .journal_values import JournalTuple, Timestamps

OUTPUT_SCHEMA = ("kind string, node string, seq long, idx long, ts long, data string, error string, "
                 "input string, event string")
OUTPUT_COLUMNS = ["kind", "node", "seq", "idx", "ts", "data", "error", "input", "event"]
STATE_SCHEMA = "snap binary"
JOURNAL_COLUMNS = ("seq", "input", "ts", "data", "end", "error")  # the journal source's rows (``error`` optional)
STATE_VERSION = 1
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


@dataclass(frozen=True)
class StageSpec:
    """One fused stream: its node name, its SELECT (or CREATE STREAM ... AS SELECT) text, its inputs.

    ``factory`` (optional, picklable) builds the processor from the spec instead of parsing
    ``bql_text`` (stand-ins in tests, other kernels). ``plugins``: the plugin specs (module names,
    ``sbpy.plugins.loader.loaded_plugins()``) a worker loads to rebuild the topology's functions/UDSFs.
    """

    node: str
    bql_text: str
    inputs: tuple[str, ...]
    factory: Callable[[StageSpec], Any] | None = field(default=None, compare=False)
    plugins: tuple[str, ...] = ()
    statement: Any = field(default=None, compare=False)  # the analyzed SELECT (the plan's); None: parse text

    def key(self) -> tuple[str, str, tuple[str, ...], str, tuple[str, ...]]:
        return (self.node, self.bql_text, tuple(self.inputs), repr(self.factory), tuple(self.plugins))


def _worker_context(topology: str, plugins: tuple[str, ...]) -> Any:
    """Functions and UDSFs of the default registries after loading ``plugins`` (no states: a UDS
    lives in the driver, see ``driver_query``)."""
    from sbpy.bql.runtime import ProcessorContext
    from sbpy.plugins.loader import load_modules
    from sbpy.plugins.registry import default_registries

    for name in plugins:  # one a worker cannot load fails only the stages that use it, by name
        try:
            load_modules([name])
        except Exception as err:  # noqa: BLE001
            import logging

            logging.getLogger("sbpy.spark").warning("worker cannot load plugin: %s", err)
    tp = default_registries().for_topology(topology)
    return ProcessorContext(functions=tp.functions, udsfs=tp.udsfs, topology=topology)


def build_stage(spec: StageSpec, topology: str = "", context: Any = None) -> Any:
    """The processor of a stage: ``spec.factory(spec)`` or the BQL kernel of ``spec.bql_text`` built
    with ``context`` (a ``ProcessorContext``; default: built-ins plus ``spec.plugins``)."""
    if spec.factory is not None:
        return spec.factory(spec)
    from sbpy.bql.analyzer import prepare
    from sbpy.bql.ast import CreateStreamAsSelect
    from sbpy.bql.parser import parse_one
    from sbpy.bql.runtime import ProcessorContext, build_processor

    if context is None:
        context = _worker_context(topology, spec.plugins) if spec.plugins else ProcessorContext(topology=topology)
    if spec.statement is not None:  # planned on the driver (``sbpy.bql.plan``): no parsing here
        return build_processor(spec.statement, context)
    stmt = parse_one(spec.bql_text)
    if isinstance(stmt, CreateStreamAsSelect):
        stmt = stmt.select
    return build_processor(prepare(stmt), context)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _Stat:
    __slots__ = ("received", "sent", "dropped", "refused")

    def __init__(self) -> None:
        self.received: dict[str, int] = {}
        self.sent = 0
        self.dropped = 0
        self.refused: dict[str, int] = {}  # input -> tuples its full buffer dropped


class Pipeline:
    """The fused processors of one query plus their end flags (pure Python; Spark-free)."""

    def __init__(self, stages: Iterable[StageSpec], topology: str = "", context: Any = None):
        self.stages = list(stages)
        self.topology = topology
        self.processors = [build_stage(s, topology, context) for s in self.stages]
        self.consumers: dict[str, list[int]] = {}
        for k, spec in enumerate(self.stages):
            for name in dict.fromkeys(spec.inputs):
                self.consumers.setdefault(name, []).append(k)
        self.output_node = self.stages[-1].node if self.stages else None
        names = {s.node for s in self.stages}
        self.buffers = [{} if s.factory is not None else
                        {i: b for i, b in stage_buffers(s.bql_text).items() if i not in names}
                        for s in self.stages]
        self._refused: dict[int, dict[int, Buffer]] = {}  # stage -> seqs its full buffers drop
        self.ended_inputs: list[set[str]] = [set() for _ in self.stages]
        self.ended: set[int] = set()
        self.ended_sources: set[str] = set()
        self.saved: bytes | None = None  # the last snapshot saved to / loaded from Spark state
        self.dirty = False  # run() began after the last save: the processors are ahead of ``saved``
        self._rows: list[tuple] = []
        self._stats: dict[int, _Stat] = {}
        self.encode_out: Callable[[Any], str] = jf.encode_data  # ``out`` rows' data (tagged JSON by default)
        self._seq = 0
        self._times = Timestamps()  # journal times as datetimes (a file segment's lines share one)
        # journal tuples made as ``JournalTuple`` (their datetime made when a stage reads it): for hosts
        # whose stages rarely read it (``stateless_query.chain_pipeline``)
        self.lazy_times = False

    # ------------------------------------------------------------ state

    def snapshot(self) -> bytes:
        return pickle.dumps({
            "v": STATE_VERSION,
            "procs": [p.snapshot() for p in self.processors],
            "ended_inputs": [sorted(s) for s in self.ended_inputs],
            "ended": sorted(self.ended),
            "ended_sources": sorted(self.ended_sources),
        }, protocol=pickle.HIGHEST_PROTOCOL)

    def restore(self, data: bytes) -> None:
        state = pickle.loads(data)
        if state.get("v") != STATE_VERSION:
            raise ValueError(f"unsupported operator state version {state.get('v')}")
        for proc, snap in zip(self.processors, state["procs"], strict=True):
            proc.restore(snap)
        self.ended_inputs = [set(s) for s in state["ended_inputs"]]
        self.ended = set(state["ended"])
        self.ended_sources = set(state["ended_sources"])
        self.saved = data

    # ------------------------------------------------------------ running

    def run(self, rows: Iterable[tuple]) -> list[tuple]:
        """Feed journal rows ``(seq, input, ts_us, data_text, end[, error])`` (sorted by seq; ``data_text``
        may be the data already decoded, a map: ``read_entries(values=True)``); return output rows. A row
        without data and with an ``error`` (a file line that is no tuple) is a ``dropped`` row of its input
        (event ``input``). The cyclic collector is paused meanwhile (``gc_pause``), on every host."""
        with gc_pause.paused():
            return self._run(rows)

    def _run(self, rows: Iterable[tuple]) -> list[tuple]:
        self._rows, self._stats = [], {}
        if any(self.buffers):
            rows = list(rows)
            self._refused = self._overflow(rows)
        # a journal input read by one stage and nothing else (not the output): its tuples go straight to
        # that stage's ``_step`` (``_deliver`` without its per-tuple consumer look-ups)
        sole = {} if self._refused or self.output_node is None else {
            name: ks[0] for name, ks in self.consumers.items() if len(ks) == 1 and name != self.output_node}
        ended, stats, processors, times = self.ended, self._stats, self.processors, self._times
        lazy = self.lazy_times
        # a sole reader with a batch entry (``Processor.batch_entry``) takes each run of its input's tuples
        # in one call (``_flush``)
        batched = {k: entry for k in set(sole.values())
                   if (entry := batch_entry_of(processors[k])) is not None}
        # ... and one whose batch may interleave its inputs (``Processor.mixed_entry``: a join) takes each
        # run of its inputs' tuples, whichever input each is, in one call
        mixed = {k: entry for k in batched if (entry := mixed_entry_of(processors[k])) is not None}
        run: list[Tuple] = []
        run_us: list[int] = []
        run_k, run_name = -1, ""
        for row in rows:
            seq, name, ts_us, text, end = row[:5]
            if batched and not end and text is not None:
                k = sole.get(name, -1)
                if k in batched and k not in ended:
                    try:
                        data = text if type(text) is dict else jf.decode_data(text)
                    except Exception:  # the row's drop is reported below, after the run
                        data = None
                    if data is not None:
                        if run and (k != run_k or (name != run_name and k not in mixed)):
                            self._flush_run(batched, mixed, run_k, run_name, run, run_us)
                            run, run_us = [], []
                        run_k, run_name = k, name
                        run.append(JournalTuple(data, ts_us, seq, name) if lazy else
                                   Tuple(data, times.get(ts_us), seq, name))
                        run_us.append(ts_us)
                        continue
            if run:
                self._flush_run(batched, mixed, run_k, run_name, run, run_us)
                run, run_us = [], []
            self._seq = seq
            if end:
                self._end_input(name)
                continue
            if text is None and len(row) > 5 and row[5]:
                self._emit("dropped", name, ts_us, None, row[5], name, "input")
                continue
            try:
                data = text if type(text) is dict else jf.decode_data(text)  # read already decoded: ``read_entries``
            except Exception as exc:
                self._emit("dropped", name, ts_us, text, _error_text(exc), name, "input")
                continue
            k = sole.get(name)
            if k is None or k in ended:
                self._deliver_data(name, data, ts_us, seq)
                continue
            stat = stats.get(k)
            if stat is None:
                stat = self._stat(k)
            received = stat.received
            received[name] = received.get(name, 0) + 1
            tup = JournalTuple(data, ts_us, seq, name) if lazy else Tuple(data, times.get(ts_us), seq, name)
            try:  # ``_step`` inline: most steps of a stateful stage emit and drop nothing
                result: StepResult = processors[k].process(tup)
            except Exception as exc:
                self._failed(k, stat, tup, exc, name)
                continue
            if result.outputs or result.dropped or result.done:
                self._take(k, stat, result, name)
        if run:
            self._flush_run(batched, mixed, run_k, run_name, run, run_us)
        self._refused = {}
        return self._batch_rows()

    def _flush_run(self, batched: dict[int, Any], mixed: dict[int, Any], k: int, name: str,
                   tuples: list[Tuple], stamps: list[int]) -> None:
        """``_flush`` through stage ``k``'s mixed entry where it has one, else its batch entry."""
        if k in mixed:
            self._flush(mixed[k], k, None, tuples, stamps)
        else:
            self._flush(batched[k], k, name, tuples, stamps)

    def _flush(self, entry: Callable[..., list[Any]], k: int, name: str | None, tuples: list[Tuple],
               stamps: list[int]) -> None:
        """A run of input ``name``'s ``tuples`` (journal times ``stamps``) through ``entry``, stage ``k``'s
        batch entry: the same rows, drops and counts as ``process`` per tuple (``Processor.process_batch``);
        ``name`` None: a run of the stage's inputs, each tuple of its own, through its mixed entry
        (``Processor.mixed_entry``)."""
        stat = self._stat(k)
        answers = entry(tuples) if name is None else entry(name, tuples)
        received = stat.received
        if name is None:
            for tup in tuples[:len(answers)]:
                received[tup.input] = received.get(tup.input, 0) + 1
        else:
            received[name] = received.get(name, 0) + len(answers)
        node = self.stages[k].node
        direct = node == self.output_node and not self.consumers.get(node)  # rows go straight out
        rows, encode = self._rows, self.encode_out
        # the texts of list answers' maps by identity: a kernel emits a map it holds again, unchanged
        # (RSTREAM's unchanged groups: ``incremental.relation.emitted`` — a flat map it holds is never
        # changed, a changed row is a new map), so its text is the same. The cache holds each map, so an
        # id stays its map's; it is let go when it holds more maps than a few answers emit.
        cache: dict[int, tuple[Any, str]] = {}
        for i, answer in enumerate(answers):
            if answer is None:
                continue
            tup = tuples[i]
            self._seq = seq = tup.seq
            kind = type(answer)
            if kind is list and direct:  # ``_emit_data``'s output rows inline, with the tuple's journal time
                stat.sent += len(answer)
                at = stamps[i]
                if len(cache) > 4 * len(answer) + 64:
                    cache = {}
                for data in answer:
                    hit = cache.get(id(data))
                    if hit is not None and hit[0] is data:
                        text = hit[1]
                    else:
                        try:
                            text = encode(data)
                        except Exception as exc:
                            self._emit("dropped", node, 0, None, _error_text(exc), node, "output")
                            continue
                        cache[id(data)] = (data, text)
                    rows.append(("out", node, seq, len(rows), at, text, None, node, None))
            elif kind is dict or kind is list:
                for data in (answer,) if kind is dict else answer:
                    stat.sent += 1
                    if direct:
                        try:
                            text = encode(data)
                        except Exception as exc:
                            self._emit("dropped", node, 0, None, _error_text(exc), node, "output")
                            continue
                        rows.append(("out", node, seq, len(rows), stamps[i], text, None, node, None))
                    else:
                        self._deliver(node, Tuple(data, tup.ts, tup.seq, ""))
            elif isinstance(answer, StepResult):
                if answer.outputs or answer.dropped or answer.done:
                    self._take(k, stat, answer, tup.input)
            else:
                self._failed(k, stat, tup, answer, tup.input)
        self._seq = tuples[-1].seq  # as after the run's last row one by one

    def _deliver_data(self, name: str, data: Any, ts_us: int, seq: int) -> None:
        """A decoded journal tuple of input ``name`` enters the chain."""
        tup = (JournalTuple(data, ts_us, seq, name) if self.lazy_times else
               Tuple(data, self._times.get(ts_us), seq, name))
        self._deliver(name, tup, True)

    def _overflow(self, rows: list[tuple]) -> dict[int, dict[int, Buffer]]:
        by_input: dict[str, list[int]] = {}
        for row in rows:
            seq, name, end = row[0], row[1], row[4]
            if not end:
                by_input.setdefault(name, []).append(seq)
        return {k: refused for k, bufs in enumerate(self.buffers)
                if bufs and (refused := overflow(by_input, bufs))}

    def _batch_rows(self) -> list[tuple]:
        """The batch's rows plus one ``stat`` row per active stage; resets the batch."""
        for k, stat in self._stats.items():
            data = {"received": stat.received, "sent": stat.sent, "dropped": stat.dropped}
            if stat.refused:
                data["refused"] = stat.refused
            self._emit("stat", self.stages[k].node, 0, jf.encode_data(data), None, None, None)
        rows_out, self._rows = self._rows, []
        return rows_out

    # ------------------------------------------------------------ wall-clock ticks (EMIT PERIODIC)

    def next_tick(self) -> _dt.datetime | None:
        """The earliest ``next_tick()`` of the stages still running (None: no stage wants a tick)."""
        times = []
        for k, proc in enumerate(self.processors):
            if k not in self.ended:
                try:
                    due = next_tick_of(proc)
                except Exception:  # reported by tick(), which asks again
                    due = _EPOCH
                if due is not None:
                    times.append(due)
        return min(times) if times else None

    def tick(self, now: _dt.datetime) -> list[tuple]:
        """Tick every running stage whose ``next_tick() <= now``, in stage (topological) order; their
        outputs are delivered downstream at once like a tuple's, so a later stage sees them before its
        own tick is considered. Returns the rows (``seq`` = the last journal seq seen) and ``stat`` rows."""
        self._rows, self._stats = [], {}
        for k, proc in enumerate(self.processors):
            if k in self.ended:
                continue
            try:
                due = next_tick_of(proc)
            except Exception as exc:
                self._stat(k).dropped += 1
                self._emit_dropped(self.stages[k].node, None, _error_text(exc), "", "other")
                continue
            if due is not None and due <= now:
                self._step(k, "tick", now, "")
        return self._batch_rows()

    def _emit(self, kind: str, node: str, ts: int, data: str | None, error: str | None,
              input_name: str | None, event: str | None) -> None:
        self._rows.append((kind, node, self._seq, len(self._rows), ts, data, error, input_name, event))

    def _stat(self, k: int) -> _Stat:
        stat = self._stats.get(k)
        if stat is None:
            stat = self._stats[k] = _Stat()
        return stat

    def _deliver(self, name: str, tup: Tuple, fresh: bool = False) -> None:
        """``tup`` of node ``name`` to the query's output and to the stages reading ``name``, each its
        own ``Tuple`` (``fresh``: ``tup`` was made for this delivery, so a sole reader may keep it)."""
        if name == self.output_node or (self.output_node is None and name not in self.consumers):
            self._emit_out(name, tup)
        consumers = self.consumers.get(name, ())
        own = fresh and len(consumers) == 1
        for k in consumers:
            if k in self.ended:
                continue
            stat = self._stat(k)
            refused = self._refused.get(k)
            if refused and tup.seq in refused and name in self.buffers[k]:
                stat.refused[name] = stat.refused.get(name, 0) + 1
                self._emit_dropped(name, tup, None, name, "output")
                continue
            stat.received[name] = stat.received.get(name, 0) + 1
            self._step(k, "process", tup if own else Tuple(tup.data, tup.ts, tup.seq, name), name)

    def _emit_out(self, node: str, tup: Tuple) -> None:
        try:
            ts_us = jf.ts_to_us(tup.ts)
        except Exception as exc:
            self._emit("dropped", node, 0, None, _error_text(exc), node, "output")
            return
        self._emit_data(node, tup.data, ts_us)

    def _emit_data(self, node: str, data: Any, ts_us: int) -> None:
        """An ``out`` row of ``data`` (encoded by ``encode_out``), or an output ``dropped`` row if it cannot be."""
        try:
            text = self.encode_out(data)
        except Exception as exc:
            self._emit("dropped", node, 0, None, _error_text(exc), node, "output")
            return
        self._emit("out", node, ts_us, text, None, node, None)

    def _step(self, k: int, method: str, arg: Any, input_name: str) -> None:
        stat = self._stat(k)
        try:
            result: StepResult = getattr(self.processors[k], method)(arg)
        except Exception as exc:
            self._failed(k, stat, arg, exc, input_name)
            return
        if result.outputs or result.dropped or result.done:  # most steps of a stateful stage: neither
            self._take(k, stat, result, input_name)

    def _failed(self, k: int, stat: _Stat, arg: Any, exc: Exception, input_name: str) -> None:
        """Stage ``k`` raised on ``arg`` (a tuple, a time or an input name): only that step is dropped."""
        stat.dropped += 1
        tup = arg if isinstance(arg, Tuple) else None
        self._emit_dropped(self.stages[k].node, tup, _error_text(exc), input_name, "other")

    def _take(self, k: int, stat: _Stat, result: StepResult, input_name: str) -> None:
        """Stage ``k``'s step ``result``: its drops reported, its outputs delivered, its end."""
        node = self.stages[k].node
        for dropped in result.dropped:
            stat.dropped += 1
            self._emit_dropped(node, dropped.tuple, dropped.error, input_name, dropped.event_type)
        for out in result.outputs:
            stat.sent += 1
            self._deliver(node, out)
        if result.done:
            self._end_stage(k)

    def _emit_dropped(self, node: str, tup: Tuple | None, error: str, input_name: str, event: str) -> None:
        text, ts = None, 0
        if tup is not None:
            try:
                text, ts = jf.encode_data(tup.data), jf.ts_to_us(tup.ts)
            except Exception:
                pass
            input_name = tup.input or input_name
        self._emit("dropped", node, ts, text, error, input_name, event)

    def _end_input(self, name: str) -> None:
        """Input ``name`` (a journal input or a stage) ended: finish its consumers."""
        if self.output_node is None:  # no stages: the journal inputs are the output
            if name not in self.ended_sources:
                self.ended_sources.add(name)
                self._emit("end", name, 0, None, None, name, None)
            return
        for k in self.consumers.get(name, ()):
            if k in self.ended or name in self.ended_inputs[k]:
                continue
            self.ended_inputs[k].add(name)
            self._step(k, "finish", name, name)
            if k not in self.ended and self.ended_inputs[k] >= set(self.stages[k].inputs):
                self._end_stage(k)

    def _end_stage(self, k: int) -> None:
        if k in self.ended:
            return
        self.ended.add(k)
        node = self.stages[k].node
        self._emit("end", node, 0, None, None, None, None)
        self._end_input(node)
