"""Shared helpers of the incremental-kernel tests: random streams and a step-by-step comparison with
the reference kernel (outputs with their exact types, dropped tuples with their error text)."""
from __future__ import annotations

import copy
import datetime as dt
import pickle
from typing import Any

from hypothesis import strategies as st
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import IncrementalSelectProcessor
from sbpy.bql.runtime.kernel import SelectProcessor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select

START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)

# values with BQL-equal pairs of different types (2 / 2.0), NULL, strings and bools
VALUES = st.sampled_from([0, 1, 2, 2.0, -1, 1.5, 3, None, "x", "y", True, False])
NUMBERS = st.sampled_from([0, 1, 2, 2.0, -1, 1.5, 3, 3.0, None])
KEYS = st.sampled_from([0, 1, 2, 2.0, None, "x"])


@st.composite
def tuples(draw: Any, inputs: tuple[str, ...] = ("s1",), messy: bool = True) -> list[tuple[str, dict, int]]:
    """A stream: (input, data, timestamp in ms). Timestamps repeat, jump and sometimes go back."""
    n = draw(st.integers(0, 30))
    out = []
    ts = 0
    for _ in range(n):
        step = draw(st.sampled_from([0, 0, 100, 250, 250, 400, 900, -300] if messy else [0, 100, 250, 400]))
        ts = max(0, ts + step)
        data: dict[str, Any] = {}
        for field, values in (("x", NUMBERS), ("k", KEYS), ("b", VALUES), ("s", st.sampled_from(["p", "q", None, 1]))):
            if messy and draw(st.integers(0, 9)) == 0:
                continue  # a missing field
            data[field] = draw(values if messy else (NUMBERS if field == "x" else KEYS if field == "k" else
                                                     st.sampled_from(["p", "q"])))
        out.append((draw(st.sampled_from(inputs)), data, ts))
    return out


def windows() -> st.SearchStrategy[str]:
    return st.sampled_from(["[RANGE 1 TUPLES]", "[RANGE 2 TUPLES]", "[RANGE 3 TUPLES]", "[RANGE 5 TUPLES]",
                            "[RANGE 500 MILLISECONDS]", "[RANGE 1 SECONDS]", "[RANGE 0.25 SECONDS]"])


def canonical(value: Any) -> Any:
    """A value with its types spelled out (2 and 2.0, 1 and True compare different)."""
    if isinstance(value, dict):
        return ("map", sorted((k, canonical(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("array", [canonical(v) for v in value])
    return (type(value).__name__, value)


class Ledger:
    """Every map a kernel emitted, with its bytes (pickle) when emitted. A kernel may emit a map it holds,
    again at later steps (``incremental.relation.emitted``): it must never change one afterwards."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, bytes]] = []

    def add(self, rows: Any) -> None:
        self.seen += [(d, pickle.dumps(d)) for d in rows]

    def check(self) -> None:
        changed = [i for i, (d, blob) in enumerate(self.seen) if pickle.dumps(d) != blob]
        assert not changed, f"emitted rows changed afterwards: {changed[:5]} of {len(self.seen)}"


def build_pair(query: str) -> tuple[Any, Any, Any]:
    stmt = parse_select(query)
    fast = build_processor(stmt, ProcessorContext())
    ref = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert type(ref) is SelectProcessor
    return stmt, fast, ref


def compare(query: str, stream: list[tuple[str, dict, int]], restore_at: frozenset[int] = frozenset(),
            require_incremental: bool = True) -> None:
    """Feed ``stream`` to both kernels step by step; outputs and dropped tuples must be identical.

    At the steps in ``restore_at`` the incremental processor is replaced by a fresh one restored from
    its snapshot (Spark's per-micro-batch restart).
    """
    stmt, inc, ref = build_pair(query)
    if require_incremental:
        assert isinstance(inc, IncrementalSelectProcessor), query
    ledger = Ledger()
    for seq, (name, data, ms) in enumerate(stream, 1):
        if seq in restore_at:
            blob = inc.snapshot()
            inc = build_processor(stmt, ProcessorContext())
            inc.restore(blob)
        ts = START + dt.timedelta(milliseconds=ms)
        got = inc.process(Tuple(copy.deepcopy(data), ts, seq, name))
        ledger.add(t.data for t in got.outputs)
        want = ref.process(Tuple(copy.deepcopy(data), ts, seq, name))
        assert [canonical(t.data) for t in got.outputs] == [canonical(t.data) for t in want.outputs], (
            f"step {seq}: {query}")
        assert [(d.error, d.event_type, d.tuple.seq) for d in got.dropped] == [
            (d.error, d.event_type, d.tuple.seq) for d in want.dropped], f"step {seq}: {query}"
        assert [(t.ts, t.seq) for t in got.outputs] == [(t.ts, t.seq) for t in want.outputs]
        assert got.done == want.done
    ledger.check()


@st.composite
def narrow_tuples(draw: Any, inputs: tuple[str, ...] = ("s1",)) -> list[tuple[str, dict, int]]:
    """Streams over very few values, so that rows with equal keys but different types (2 / 2.0)
    meet often; timestamps still repeat and go back."""
    n = draw(st.integers(0, 25))
    out = []
    ts = 0
    for _ in range(n):
        ts = max(0, ts + draw(st.sampled_from([0, 250, 250, 600, -300])))
        data = {"x": draw(st.sampled_from([2, 2.0, 2, None])), "k": draw(st.sampled_from([1, 1.0, 2])),
                "s": draw(st.sampled_from(["p", "p", 1]))}
        out.append((draw(st.sampled_from(inputs)), data, ts))
    return out
