"""``EXPLAIN``: a ``QueryPlan`` as text (one line per fact) and as a JSON-ready dict.

Example (``EXPLAIN SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE price < 8``)::

    execution: stateless (every stage is memoryless: all partitions, no shuffle, no state store)
    journal inputs: src
    stage (select) [native-jvm]
      tier: the whole chain compiles to Spark expressions (price: number; output id, price)
      kernel: generated type-guarded code (RSTREAM over [RANGE 1 TUPLES]; a batch as one list comprehension; the reference fast path for rows outside its guards)
      runs on: JVM
      partitioning: any partition of the journal read; rows outside the compiled types take the kernel on the driver (order restored by (seq, idx))
      state: none
      why: RSTREAM over [RANGE 1 TUPLES] of one input, no aggregate: each tuple's rows depend on it alone
      reads: src
      SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE price < 8
"""
from __future__ import annotations

from typing import Any

from .nodes import QueryPlan, StagePlan


def _stage_lines(stage: StagePlan, label: str) -> list[str]:
    lines = [f"stage {label} [{stage.tier.value}]",
             f"  runs on: {stage.where.value}",
             f"  partitioning: {stage.partitioning}",
             f"  state: {stage.state}",
             f"  why: {stage.why}",
             f"  reads: {', '.join(stage.inputs)}"]
    if stage.tier_why:
        lines.insert(1, f"  tier: {stage.tier_why}")
    if stage.implementation:
        lines.insert(2 if stage.tier_why else 1, f"  kernel: {stage.implementation}")
    if stage.tick_ms:
        lines.append(f"  wall-clock ticks: every {stage.tick_ms} ms")
    if stage.stateful_calls:
        lines.append(f"  calls reaching states: {', '.join(stage.stateful_calls)}")
    for buf in stage.buffers:
        lines.append(f"  buffer: {buf}")
    lines += ["  " + line for line in stage.text.strip().splitlines()]
    return lines


def render(plan: QueryPlan, labels: dict[str, str] | None = None) -> str:
    """The plan as text; ``labels`` renames stage nodes (e.g. an ad-hoc SELECT's internal id)."""
    labels = labels or {}
    lines = [f"execution: {plan.execution.value} ({plan.reason})",
             f"journal inputs: {', '.join(plan.inputs) or '-'}"]
    if plan.tick_ms:
        lines.append(f"trigger: every {plan.tick_ms} ms (wall-clock ticks)")
    for stage in plan.stages:
        lines += _stage_lines(stage, labels.get(stage.node, stage.node))
    lines += list(plan.notes)
    return "\n".join(lines)


def as_dict(plan: QueryPlan, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """The plan as a JSON-ready dict (REST)."""
    labels = labels or {}
    return {
        "execution": plan.execution.value,
        "reason": plan.reason,
        "inputs": list(plan.inputs),
        "tick_ms": plan.tick_ms,
        "stages": [{
            "node": labels.get(s.node, s.node), "tier": s.tier.value, "runs_on": s.where.value,
            "partitioning": s.partitioning, "state": s.state, "why": s.why, "kernel": s.kernel,
            "inputs": list(s.inputs), "stateful_calls": list(s.stateful_calls), "buffers": list(s.buffers),
            "tick_ms": s.tick_ms, "statement": s.text.strip(), "tier_why": s.tier_why,
            "implementation": s.implementation,
        } for s in plan.stages],
        "text": render(plan, labels),
    }
