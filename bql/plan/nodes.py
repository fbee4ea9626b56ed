"""The physical plan of one consumer's query: typed, built once on the driver, pickled to workers.

A ``QueryPlan`` says how a query runs (its ``Execution``), and per stage (one fused stream or the
ad-hoc SELECT) its tier, where it runs, how its rows are partitioned, where its state lives and why.
The runtime reads these facts instead of re-parsing BQL text; ``EXPLAIN`` prints them
(``explain.render``). Pure data: no Spark, no server.

Executions (what the whole query is on Spark):

- ``stateless``: every stage is memoryless (one tuple in, its rows out); the journal is read in several
  partitions, with no shuffle and no state store; the driver restores arrival order by ``(seq, idx)``.
  Its stages are ``native-jvm`` (Spark column expressions over the raw lines, ``bql/spark/native_stage``;
  rows outside the compiled types take the kernel) when the whole chain compiles, else
  ``vectorized-python`` (each reader runs the stages, ``sbpy_stateless``).
- ``sequential``: the stages run in one ``applyInPandasWithState`` group on an executor (global arrival
  order; state pickled into Spark's state store).
- ``keyed``: a MATCH_RECOGNIZE with PARTITION BY runs by partition key, in buckets of keys, between a
  router and a tail (``bql/spark/keyed_plan.py``, ``keyed_buckets.py``).
- ``driver``: the stages run in the driver's ``foreachBatch`` (no shuffle, no state-store commit; the
  pipeline snapshot goes to a file per batch). Chosen when a stage calls a function that reaches the
  topology's states (UDS), or for latency when the chain's state is small and bounded.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


SMALL_STATE_TUPLES = 256  # a chain holding at most this many tuples runs on the driver (latency path)


class Execution(str, enum.Enum):
    STATELESS = "stateless"
    SEQUENTIAL = "sequential"
    KEYED = "keyed"
    DRIVER = "driver"


class Tier(str, enum.Enum):
    """How one stage is computed."""

    NATIVE = "native-jvm"              # memoryless; Spark column expressions over the raw lines (Catalyst)
    VECTORIZED = "vectorized-python"   # memoryless; runs in the journal reader of every partition
    SEQUENTIAL = "sequential-python"   # the per-tuple kernel in arrival order, state in Spark's store
    KEYED = "keyed-python"             # per partition key (MATCH_RECOGNIZE PARTITION BY)
    DRIVER = "driver-python"           # in the driver's foreachBatch


class Where(str, enum.Enum):
    """Where a stage's work runs."""

    JVM = "JVM"
    EXECUTOR = "executor Python"
    DRIVER = "driver"


@dataclass(frozen=True)
class StagePlan:
    """One stage: a fused stream (``node``) or the ad-hoc SELECT, with the facts the runtime needs."""

    node: str
    text: str                         # the statement as written (for EXPLAIN and checkpoint names)
    inputs: tuple[str, ...]
    statement: Any                    # the analyzed ``Select``/``SelectUnion`` (pickled to workers)
    kernel: str                       # select | union | match_recognize | timeplus | emitter_options |
                                      # table | subquery | custom (does not build here)
    stateless: bool                   # memoryless: each tuple's rows depend on that tuple only
    why: str                          # why it is (not) stateless
    state: str                        # what state it keeps, in words
    tick_ms: int | None = None        # wall-clock period (EMIT PERIODIC), None if none
    stateful_calls: tuple[str, ...] = ()  # functions/UDSFs reaching the topology's states
    buffers: tuple[str, ...] = ()     # dropping buffers, described
    bounded_tuples: int | None = None  # the most tuples its state can hold (None: unbounded/unknown)
    tier: Tier = Tier.SEQUENTIAL
    where: Where = Where.EXECUTOR
    partitioning: str = "one group (global arrival order)"
    tier_why: str = ""                # why this tier (and not a faster one)
    implementation: str = ""          # how the kernel computes it (incremental kernel, automaton, ...)


@dataclass(frozen=True)
class QueryPlan:
    """How one consumer's query runs: its journal inputs, its stages in dependency order, and why."""

    inputs: tuple[str, ...]
    stages: tuple[StagePlan, ...]
    execution: Execution
    reason: str
    tick_ms: int = 0                  # trigger interval for wall-clock ticks (0: none)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def stage_names(self) -> list[str]:
        return [s.node for s in self.stages]

    @property
    def holds_tuples(self) -> bool:
        """Whether a stage keeps raw input tuples beyond the small bound: a window of a SELECT or UNION
        over more than ``SMALL_STATE_TUPLES`` tuples or over time. The fused operator then commits its
        state as a log of the batches' rows (``bql/spark/state_log``); a Timeplus window's panes or a
        pattern's open matches are smaller than a batch's rows, and keep the snapshot layout."""
        return holds_tuples(self.stages)

    @property
    def stateful_calls(self) -> list[str]:
        return list(dict.fromkeys(c for s in self.stages for c in s.stateful_calls))


def holds_tuples(stages: tuple[StagePlan, ...] | list[StagePlan]) -> bool:
    """``QueryPlan.holds_tuples`` of these stages (the planner asks before the plan exists)."""
    return any(s.kernel in ("select", "union") and not s.stateless
               and (s.bounded_tuples is None or s.bounded_tuples > SMALL_STATE_TUPLES) for s in stages)
