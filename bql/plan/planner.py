"""Planning a consumer's query: from its chain (journal inputs + stage texts) to a ``QueryPlan``.

Each stage text is parsed and analyzed once, here, on the driver; the plan carries the analyzed
statements to the workers. Small ordered steps:

1. ``describe_stage``: per stage its kernel, whether it is memoryless, its state bound, tick period,
   calls that reach the topology's states and dropping buffers;
2. ``choose_execution``: the cheapest execution whose semantics match (first rule that applies):
   UDS calls → driver; wall-clock ticks → sequential; all stages memoryless over one input each →
   stateless; a MATCH_RECOGNIZE with PARTITION BY, or a tumble/hop GROUP BY over plain fields
   (``bql/spark/keyed_window_plan``) → keyed, on request only (``SBPY_KEYED_MATCH`` /
   ``SBPY_KEYED_WINDOWS``: on 2 cores both measured slower than one group); a small bounded state →
   driver (no shuffle, no state-store commit per micro-batch: the latency path); Timeplus windows or a
   MATCH_RECOGNIZE not run keyed as the only state → driver (the driver saves Spark's per-batch cost
   around a Python stateful operator); otherwise sequential;
3. ``native_verdict``: a stateless chain runs native (Spark expressions, ``bql/spark/native_stage``) when
   every stage compiles and the JVM function is available, else vectorized Python;
4. ``_place``: each stage's tier (and why), where it runs and how its rows are partitioned.

``force`` (tests, ``SBPY_FORCE_EXECUTION``) picks an execution where the planner allows it: sequential
and driver always, stateless only for memoryless chains, keyed only where the split applies.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import os
from collections.abc import Callable, Collection, Sequence
from typing import Any

from .nodes import SMALL_STATE_TUPLES, Execution, QueryPlan, StagePlan, Tier, Where, holds_tuples

FORCE_ENV = "SBPY_FORCE_EXECUTION"
KEYED_WINDOWS_ENV = "SBPY_KEYED_WINDOWS"  # "1": a keyed-eligible Timeplus window runs keyed by default
KEYED_MATCH_ENV = "SBPY_KEYED_MATCH"  # "1": a MATCH_RECOGNIZE with PARTITION BY runs keyed by default

StageText = tuple[str, str, Sequence[str]]  # (node, select text, input names)


def analyze_stage(text: str) -> Any:
    """The analyzed SELECT / SELECT UNION of a stage text (a CREATE STREAM ... AS SELECT is unwrapped)."""
    from sbpy.bql.analyzer import prepare
    from sbpy.bql.ast import CreateStreamAsSelect
    from sbpy.bql.parser import parse_one

    stmt = parse_one(text)
    if isinstance(stmt, CreateStreamAsSelect):
        stmt = stmt.select
    return prepare(stmt)


def _kernel(proc: Any) -> str:
    from sbpy.bql.runtime.kernel import SelectProcessor
    from sbpy.bql.runtime.union import UnionProcessor

    if isinstance(proc, SelectProcessor):
        return "select"
    if isinstance(proc, UnionProcessor):
        return "union"
    name = type(proc).__name__
    return {"MatchRecognizeProcessor": "match_recognize", "WindowProcessor": "timeplus",
            "SubstreamProcessor": "timeplus", "EmitterOptionsProcessor": "emitter_options",
            "TableQueryProcessor": "table", "SubqueryProcessor": "subquery"}.get(name, "custom")


def _memoryless(proc: Any) -> tuple[bool, str]:
    """Whether every step of ``proc`` depends on its own tuple only, and why (not)."""
    from sbpy.bql.runtime.emitter_options import EmitterOptionsProcessor
    from sbpy.bql.runtime.kernel import SelectProcessor
    from sbpy.bql.runtime.union import UnionProcessor

    if isinstance(proc, UnionProcessor):
        verdicts = [_memoryless(b) for b in proc.branches]
        bad = [why for ok, why in verdicts if not ok]
        return (not bad, "every UNION ALL branch is memoryless" if not bad else bad[0])
    if isinstance(proc, EmitterOptionsProcessor):
        return False, ("emitter options ([LIMIT n], [EVERY ...], [SAMPLE x%]) count, sample or hold back "
                       "the tuples emitted so far")
    if not isinstance(proc, SelectProcessor):
        return False, f"a {_kernel(proc).replace('_', ' ')} stage keeps state across tuples"
    if proc.limit is not None:
        return False, "LIMIT counts the tuples emitted so far"
    if proc.shape is not None:
        return False, "DISTINCT / ORDER BY run in the SELECT kernel's relation step"
    if proc.fast:
        return True, "RSTREAM over [RANGE 1 TUPLES] of one input, no aggregate: each tuple's rows depend on it alone"
    if len(proc.slots) != 1:
        return False, "a join keeps every input's window"
    if proc.slots[0].udsf is not None:
        return False, "a UDSF may keep state"
    if proc.grouping is not None:
        return False, "GROUP BY / aggregates over a window"
    if proc.emitter.kind != "rstream":
        return False, f"{proc.emitter.kind.upper()} compares with the previous relation"
    return False, "the window holds more than the current tuple"


def _bound(proc: Any) -> int | None:
    """The most tuples ``proc``'s state can hold (None: time windows, patterns, ... unbounded)."""
    from sbpy.bql.runtime.kernel import SelectProcessor
    from sbpy.bql.runtime.union import UnionProcessor

    if isinstance(proc, UnionProcessor):
        parts = [_bound(b) for b in proc.branches]
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]
    if not isinstance(proc, SelectProcessor) or any(s.udsf is not None for s in proc.slots):
        return None
    total = 0
    for slot in proc.slots:
        if slot.window.unit != "tuples":
            return None
        total += int(slot.window.size)
    return total


def _state_words(proc: Any, stateless: bool) -> str:
    if stateless:
        return "none"
    bound = _bound(proc)
    if bound is not None:
        return f"windows of at most {bound} tuples, the emitter's last relation"
    return {"match_recognize": "open matches and the reorder buffer per partition",
            "timeplus": "open windows, groups and the watermark"}.get(_kernel(proc), "windows and the emitter's last relation")


def describe_stage(node: str, text: str, inputs: Sequence[str], context: Any = None,
                   stateful_calls: Callable[[Any], list[str]] | None = None) -> StagePlan:
    """The facts of one stage (tier and placement are set later by ``_place``)."""
    from sbpy.bql.runtime import ProcessorContext, build_processor
    from sbpy.bql.runtime.processor import tick_period_of
    from sbpy.bql.spark.buffers import stage_buffers

    statement = analyze_stage(text)
    calls = tuple(stateful_calls(statement)) if stateful_calls is not None else ()
    try:
        proc = build_processor(statement, context or ProcessorContext())
    except Exception as err:  # noqa: BLE001 - reported by the worker that builds it
        return StagePlan(node, text, tuple(inputs), statement, "custom", False,
                         f"does not build here ({type(err).__name__})", "unknown", stateful_calls=calls)
    stateless, why = _memoryless(proc)
    period = tick_period_of(proc)
    tick_ms = None if period is None else max(1, math.ceil(period / _dt.timedelta(milliseconds=1)))
    buffers = tuple(f"{name}: {b.describe()}" for name, b in stage_buffers(text).items())
    return StagePlan(node, text, tuple(inputs), statement, _kernel(proc), stateless, why,
                     _state_words(proc, stateless), tick_ms, calls, buffers, _bound(proc),
                     implementation=_implementation(proc))


def _implementation(proc: Any) -> str:
    """How the kernel computes a stage (which SELECT kernel, which MATCH_RECOGNIZE engine)."""
    from sbpy.bql.runtime.emitter_options import EmitterOptionsProcessor
    from sbpy.bql.runtime.incremental.processor import IncrementalSelectProcessor
    from sbpy.bql.runtime.kernel import SelectProcessor
    from sbpy.bql.runtime.left_join import LeftJoinProcessor
    from sbpy.bql.runtime.match.processor import MatchRecognizeProcessor
    from sbpy.bql.runtime.timeplus.processor import WindowProcessor
    from sbpy.bql.runtime.union import UnionProcessor

    if isinstance(proc, EmitterOptionsProcessor):
        return f"SensorBee's emitter options over the query's output; the query: {_implementation(proc.inner)}"
    if isinstance(proc, IncrementalSelectProcessor):
        return proc.kernel_description()
    if isinstance(proc, LeftJoinProcessor):
        return "LEFT JOIN kernel (the reference SELECT kernel with SQL's LEFT JOIN as each step's relation)"
    if isinstance(proc, SelectProcessor):
        return "reference SELECT kernel" + (" (fast path)" if proc.fast else "")
    if isinstance(proc, MatchRecognizeProcessor):
        return proc.engine_description()
    if isinstance(proc, UnionProcessor):
        return "; ".join(f"branch {k + 1}: {_implementation(b)}" for k, b in enumerate(proc.branches))
    if isinstance(proc, WindowProcessor):
        return proc.kernel_description()
    return ""


def native_verdict(inputs: Sequence[str], stages: Sequence[StagePlan], context: Any = None,
                   line_inputs: Collection[str] | None = None) -> str:
    """"" if the memoryless chain compiles to the native tier (``bql/spark/native_stage``), else why not.
    ``line_inputs``: the inputs whose journals hold file lines (None: not known, any may)."""
    from sbpy.bql.spark.native_stage import Unsupported, compile_stages
    from sbpy.bql.spark.native_udf import status

    if len(inputs) != 1:
        return "the chain reads several journal inputs"
    previous = inputs[0]
    for s in stages:
        if tuple(s.inputs) != (previous,):
            return f"stage '{s.node}' does not read only the stage before it"
        previous = s.node
    try:
        compile_stages([(s.node, s.statement) for s in stages], context)
    except Unsupported as e:
        return str(e)
    if line_inputs is not None and inputs[0] not in line_inputs:
        # the native tier's gain is Spark reading file lines; Python rows would cross to the JVM and back
        return (f"input '{inputs[0]}' journals tuples, not file lines (the native tier reads file lines; "
                "tuples would cross the JVM as one JSON text each)")
    ok, why = status()
    return "" if ok else f"the native function is not available: {why}"


def _stateless_chain(inputs: Sequence[str], stages: Sequence[StagePlan]) -> str | None:
    """None if the whole chain can run memoryless on any partition, else why not."""
    if not stages:
        return "no stage"
    names = set()
    for s in stages:
        if not s.stateless:
            return f"stage '{s.node}': {s.why}"
        if s.buffers:
            return f"stage '{s.node}' has a dropping BUFFER (decided per micro-batch over the whole batch)"
        if len(set(s.inputs)) != 1 or not (s.inputs[0] in inputs or s.inputs[0] in names):
            return f"stage '{s.node}' reads several inputs (its end needs all of them)"
        names.add(s.node)
    return None


def keyed_stage(stages: Sequence[StagePlan], inputs: Sequence[str]) -> str | None:
    """The stage the keyed split would run by key — a MATCH_RECOGNIZE by partition, a Timeplus window
    GROUP BY by its plain fields (None: no split applies)."""
    from sbpy.bql.spark.keyed_plan import plan_keyed
    from sbpy.bql.spark.operator import StageSpec

    keyed = plan_keyed([StageSpec(s.node, s.text, s.inputs, statement=s.statement) for s in stages], tuple(inputs))
    return keyed.keyed.node if keyed is not None else None


_WHOLE_STATE = {"timeplus": "Timeplus window aggregation", "match_recognize": "MATCH_RECOGNIZE"}


def _whole_state_kinds(stages: Sequence[StagePlan]) -> str:
    """What the chain's stateful stages are ("" unless every one is a Timeplus window or a MATCH_RECOGNIZE:
    state committed as one snapshot per micro-batch — the open windows' panes, the open matches — not the
    tuples of a RANGE window)."""
    stateful = [s for s in stages if not s.stateless]
    if not stateful or any(s.kernel not in _WHOLE_STATE for s in stateful):
        return ""
    return ", ".join(dict.fromkeys(_WHOLE_STATE[s.kernel] for s in stateful))


def _is_window(stages: Sequence[StagePlan], node: str | None) -> bool:
    return any(s.node == node and s.kernel == "timeplus" for s in stages)


def keyed_windows() -> bool:
    """Whether a Timeplus window GROUP BY that can run keyed does so without being forced."""
    return os.environ.get(KEYED_WINDOWS_ENV, "").strip() == "1"


def keyed_matches() -> bool:
    """Whether a MATCH_RECOGNIZE with PARTITION BY that can run keyed does so without being forced."""
    return os.environ.get(KEYED_MATCH_ENV, "").strip() == "1"


def keyed_note(stage: StagePlan, keyed_node: str | None = None) -> str:
    """Why a stage that is not run by key is not: the chain's keyed stage when the keyed execution was not
    chosen, or a Timeplus window stage that cannot be keyed ("" for anything else)."""
    from sbpy.bql.spark.keyed_window_plan import window_verdict
    from sbpy.bql.spark.operator import StageSpec

    if stage.node == keyed_node and stage.kernel == "timeplus":
        return ("keyed execution possible but not chosen: measured slower than one group on 2 cores (its "
                f"ordered router alone costs 0.3-0.4x the kernel; README B4); {KEYED_WINDOWS_ENV}=1 or "
                f"{FORCE_ENV}=keyed chooses it")
    if stage.node == keyed_node:
        return ("keyed execution possible but not chosen: through a topology on 2 cores it measured 3-7x slower "
                "than the driver (Spark's per-batch work around the per-key operator; README Session 15); "
                f"{KEYED_MATCH_ENV}=1 or {FORCE_ENV}=keyed chooses it")
    if stage.kernel != "timeplus":
        return ""
    keys, why = window_verdict(StageSpec(stage.node, stage.text, stage.inputs, statement=stage.statement))
    if keys is not None:
        return ("keyed execution not used: the chain does not split around this window stage (it must read a "
                "journal input directly, and no journal input may also feed a later stage)")
    return f"keyed execution not used: {why}" if why else ""


def choose_execution(inputs: Sequence[str], stages: Sequence[StagePlan], keyed_node: str | None = None,
                     force: Execution | None = None) -> tuple[Execution, str, int]:
    """``(execution, reason, tick interval ms)`` for the chain; ``keyed_node``: ``keyed_stage``'s answer."""
    from sbpy.bql.spark.tick_interval import tick_interval_from_periods

    calls = list(dict.fromkeys(c for s in stages for c in s.stateful_calls))
    tick_ms = tick_interval_from_periods([s.tick_ms for s in stages if s.tick_ms is not None])
    not_stateless = _stateless_chain(inputs, stages)
    keyed = not tick_ms and not calls and keyed_node is not None
    window_keyed = keyed and _is_window(stages, keyed_node)  # else a MATCH_RECOGNIZE by partition
    bound = [s.bounded_tuples for s in stages]
    if force is not None:
        if force is Execution.STATELESS and (not_stateless or calls or tick_ms):
            force = None
        elif force is Execution.KEYED and not keyed:
            force = None
        elif force is not Execution.DRIVER and calls:
            force = None
        if force is not None:
            return force, f"forced ({FORCE_ENV} or a test)", tick_ms
    if calls:
        return Execution.DRIVER, f"it calls {', '.join(calls)}, which may use the topology's states (UDS live in the driver)", tick_ms
    if tick_ms:
        return Execution.SEQUENTIAL, f"a stage emits on the wall clock every {tick_ms} ms (group timeouts)", tick_ms
    if not_stateless is None:
        return Execution.STATELESS, "every stage is memoryless: all partitions, no shuffle, no state store", 0
    if window_keyed and keyed_windows():
        return (Execution.KEYED, "a tumble/hop GROUP BY over plain fields: by GROUP BY key, in buckets of keys, "
                "after an ordered pass that decides the watermark, late tuples and window closing", 0)
    if keyed and not window_keyed and keyed_matches():
        return Execution.KEYED, "MATCH_RECOGNIZE with PARTITION BY: by partition key, in buckets of keys", 0
    if all(b is not None for b in bound) and sum(bound) <= SMALL_STATE_TUPLES:  # type: ignore[arg-type]
        return (Execution.DRIVER, f"small bounded state ({sum(bound)} tuples at most: {not_stateless}); "  # type: ignore[arg-type]
                "the driver runs it with no shuffle and no state-store commit per micro-batch", 0)
    kinds = _whole_state_kinds(stages)
    if kinds and keyed and not window_keyed:  # a MATCH_RECOGNIZE by partition, not run keyed
        return (Execution.DRIVER, f"{kinds} with PARTITION BY, the keyed execution not chosen (the stage's tier "
                "line says why): the driver runs every partition without a Python worker, Arrow transfers or a "
                "state-store commit per micro-batch (README Session 15)", 0)
    if kinds:
        return (Execution.DRIVER, f"{kinds}: one arrival order and the state (open windows' panes, open matches) "
                "committed whole every micro-batch, wherever it runs; the driver runs it without a Python "
                "worker, Arrow transfers or a state-store commit per micro-batch (README Session 14)", 0)
    return Execution.SEQUENTIAL, f"{not_stateless}: the stages need one global arrival order", 0


_PLACEMENT = {
    Execution.STATELESS: (Tier.VECTORIZED, Where.EXECUTOR,
                          "any partition of the journal read (order restored by (seq, idx) at the driver)"),
    Execution.SEQUENTIAL: (Tier.SEQUENTIAL, Where.EXECUTOR, "one group (global arrival order)"),
    Execution.DRIVER: (Tier.DRIVER, Where.DRIVER, "the whole micro-batch, sorted by seq"),
}


_NATIVE_PARTITIONING = ("any partition of the journal read; rows outside the compiled types take the kernel "
                        "on the driver (order restored by (seq, idx))")


KEYED_PARTITIONING = ("bucketed by PARTITION BY key: one group, one Python call per micro-batch, per bucket "
                      "crc32(key) mod N; N buckets = the query's state partitions "
                      "(spark.sql.shuffle.partitions at its first start, sbpy's default 2), pinned in its checkpoint")


KEYED_ROUTING = ("; each tuple's key computed and its row packed for its bucket inside the journal reads "
                 "(sbpy_routed), no router operator")
KEYED_ROUTER = "; a one-group router runs the stages before it and routes their rows to the buckets"


WINDOW_PARTITIONING = ("bucketed by the plain GROUP BY fields: one group, one Python call per micro-batch, per "
                       "bucket crc32(key) mod N (N pinned as for MATCH_RECOGNIZE); a one-group ordered router "
                       "before it decides the global watermark, late tuples and which tuple closes which window, "
                       "and the driver restores the kernel's order by (seq, idx, sub)")


def _place(plan_stages: Sequence[StagePlan], execution: Execution, keyed_node: str | None,
           native_why: str = "") -> tuple[StagePlan, ...]:
    out = []
    from sbpy.bql.spark.state_log import LOGGED, wanted_layout

    ticks = any(s.tick_ms for s in plan_stages)
    logged = wanted_layout(ticks, holds_tuples(plan_stages)) == LOGGED
    for s in plan_stages:
        tier_why = ""
        if execution is Execution.STATELESS:
            tier_why = ("the whole chain compiles to Spark expressions over the raw lines" if not native_why
                        else f"native tier not used: {native_why}")
        if execution is Execution.STATELESS and not native_why:
            tier, where, part = Tier.NATIVE, Where.JVM, _NATIVE_PARTITIONING
        elif execution is Execution.KEYED:
            if s.node == keyed_node and s.kernel == "timeplus":
                tier, where, part = Tier.KEYED, Where.EXECUTOR, WINDOW_PARTITIONING
                tier_why = "a tumble/hop GROUP BY over plain fields, AFTER WATERMARK: every group lives in one key"
            elif s.node == keyed_node:
                first = plan_stages[0].node == keyed_node  # no stage before it: routed in the reads
                tier, where = Tier.KEYED, Where.EXECUTOR
                part = KEYED_PARTITIONING + (KEYED_ROUTING if first else KEYED_ROUTER)
            else:
                tier, where, part = Tier.SEQUENTIAL, Where.EXECUTOR, "one group (router or tail, arrival order)"
        else:
            tier, where, part = _PLACEMENT[execution]
        state = s.state
        if execution is Execution.DRIVER and state != "none":
            state += " (pickled to a driver snapshot file per micro-batch)"
        elif execution is Execution.KEYED and s.node == keyed_node and s.kernel == "timeplus":
            state += (" (per bucket, a state-store map from window start to the bucket's rows of that window: a"
                      " micro-batch writes the windows it touched; the router keeps the watermark and the open"
                      " windows' buckets)")
        elif execution is Execution.KEYED and s.node == keyed_node and state != "none":
            state += (" (one pickled snapshot per PARTITION BY key in a state-store map: a micro-batch writes"
                      " the keys it touched)")
        elif execution is Execution.SEQUENTIAL and state != "none" and logged:
            state += (" (in Spark's state store as a base snapshot plus each micro-batch's rows: a micro-batch"
                      " writes its own rows, not the window)")
        elif execution in (Execution.SEQUENTIAL, Execution.KEYED) and state != "none":
            state += " (pickled into Spark's state store)"
        if tier in (Tier.SEQUENTIAL, Tier.DRIVER) and not tier_why:
            tier_why = keyed_note(s, keyed_node)
        out.append(dataclasses.replace(s, tier=tier, where=where, partitioning=part, state=state, tier_why=tier_why))
    return tuple(out)


def forced_execution() -> Execution | None:
    """The execution named by ``SBPY_FORCE_EXECUTION`` (tests and exactness runs), else None."""
    value = os.environ.get(FORCE_ENV, "").strip().lower()
    return Execution(value) if value else None


def plan_query(inputs: Sequence[str], stages: Sequence[StageText], context: Any = None,
               stateful_calls: Callable[[Any], list[str]] | None = None,
               force: Execution | None = None, line_inputs: Collection[str] | None = None) -> QueryPlan:
    """Plan a consumer's chain. ``context``: the topology's ``ProcessorContext`` (its functions and
    UDSFs); ``stateful_calls(statement)``: the calls of a statement that reach the topology's states;
    ``line_inputs``: the inputs whose journals hold file lines (``native_verdict``; None: not known)."""
    described = [describe_stage(n, t, i, context, stateful_calls) for n, t, i in stages]
    keyed_node = keyed_stage(described, inputs)
    execution, reason, tick_ms = choose_execution(inputs, described, keyed_node, force or forced_execution())
    native_why = (native_verdict(inputs, described, context, line_inputs) if execution is Execution.STATELESS
                  else "")
    return QueryPlan(tuple(inputs), _place(described, execution, keyed_node, native_why), execution, reason,
                     tick_ms)
