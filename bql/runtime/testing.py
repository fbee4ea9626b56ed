"""An in-process harness: run one BQL SELECT over finite inputs without Spark or a server.

``run_query(query, inputs, interleave=None, timestamp_field=None)`` parses the query, analyzes it,
builds its processor and feeds the inputs tuple by tuple in the conformance runner's global arrival
order (``interleave`` names the input of each step; tuples it does not cover follow, input by input).
Timestamps come from ``timestamp_field`` (epoch seconds → UTC) or else from a fake clock that starts at
a fixed instant and advances one millisecond per tuple (SensorBee's file source stamps tuples with the
time they are read). Outputs are returned as JSON values (what a ``file`` sink would write).
"""
from __future__ import annotations

import datetime as _dt
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .processor import Dropped, ProcessorContext, Tuple

CLOCK_START = _dt.datetime(2024, 1, 1, tzinfo=_dt.timezone.utc)
CLOCK_STEP = _dt.timedelta(milliseconds=1)


@dataclass
class RunResult:
    """Everything a run produced: JSON-ready outputs (in emission order) and the dropped steps."""

    outputs: list[Any] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    done: bool = False


def arrival_order(inputs: Mapping[str, Sequence[Any]], interleave: Sequence[str] | None) -> list[str]:
    """Stream name per step, as the conformance runner feeds them."""
    order: list[str] = []
    used: Counter = Counter()
    for name in interleave or []:
        if name not in inputs:
            raise ValueError(f"interleave names unknown input {name!r}")
        if used[name] < len(inputs[name]):
            order.append(name)
            used[name] += 1
    for name, rows in inputs.items():
        order += [name] * (len(rows) - used[name])
    return order


def to_timestamp(value: Any) -> _dt.datetime:
    """Epoch seconds (int/float) or an RFC3339 string → aware UTC datetime (µs)."""
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, (int, float)):
        return CLOCK_EPOCH + _dt.timedelta(microseconds=round(value * 1_000_000))
    if isinstance(value, str):
        t = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)
    if isinstance(value, _dt.datetime):
        return value
    raise ValueError(f"not a timestamp: {value!r}")


CLOCK_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def json_ready(data: Any) -> Any:
    """A value as it comes back from a JSON file sink (timestamps as RFC3339 strings ...)."""
    from ..jsonio import from_json, to_json

    return from_json(to_json(data))


def _lookup_path(data: Any, path: str) -> Any:
    cur = data
    for part in path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def parse_select(query: str, registry: Any = None) -> Any:
    """Parse, prepare and analyze one SELECT statement (analysis errors raise ``BQLAnalysisError``)."""
    from ..analyzer import analyze, prepare
    from ..parser import parse_one

    text = query.strip().rstrip(";")
    stmt = parse_one(text)
    prepared = prepare(stmt)
    stmt = prepared if prepared is not None else stmt
    analyze(stmt, text, registry)
    return stmt


def run_processor(processor: Any, inputs: Mapping[str, Sequence[dict]], interleave: Sequence[str] | None = None,
                  timestamp_field: str | None = None) -> RunResult:
    """Feed ``inputs`` to an already built processor; see ``run_query``."""
    result = RunResult()
    cursor: Counter = Counter()
    clock = CLOCK_START
    for seq, name in enumerate(arrival_order(inputs, interleave), start=1):
        data = json_ready(inputs[name][cursor[name]])
        cursor[name] += 1
        clock += CLOCK_STEP
        ts = clock
        if timestamp_field is not None:
            raw = _lookup_path(data, timestamp_field)
            if raw is not None:
                ts = to_timestamp(raw)
        step = processor.process(Tuple(data, ts, seq, name))
        _collect(result, step)
        if step.done:
            return result
    for name in inputs:
        step = processor.finish(name)
        _collect(result, step)
        if step.done:
            break
    return result


def _collect(result: RunResult, step: Any) -> None:
    result.outputs.extend(json_ready(t.data) for t in step.outputs)
    result.dropped.extend(step.dropped)
    result.done = result.done or step.done


def run_query_detailed(query: str, inputs: Mapping[str, Sequence[dict]], interleave: Sequence[str] | None = None,
                       timestamp_field: str | None = None,
                       context: ProcessorContext | None = None) -> RunResult:
    """Like ``run_query`` but also returns the dropped steps."""
    from . import build_processor

    registry = context.functions if context is not None else None
    processor = build_processor(parse_select(query, registry), context)
    return run_processor(processor, inputs, interleave, timestamp_field)


def run_query(query: str, inputs: Mapping[str, Sequence[dict]], interleave: Sequence[str] | None = None,
              timestamp_field: str | None = None, context: ProcessorContext | None = None) -> list[Any]:
    """The JSON outputs of ``query`` over ``inputs`` (a dict input name → list of tuple data)."""
    return run_query_detailed(query, inputs, interleave, timestamp_field, context).outputs


def dumps(rows: Sequence[Any]) -> str:
    """JSON lines, for debugging output."""
    return "\n".join(json.dumps(r, sort_keys=True) for r in rows)
