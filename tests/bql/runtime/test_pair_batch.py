"""The light loop of an ISTREAM join's run of one input (``incremental/pair_batch.py``) compared tuple for
tuple with the reference kernel.

Runs are forced over every batch (``LightPairs.takes`` always yes) so that short random streams on two
inputs exercise loading, stopping at a tuple the loop does not take (a float, bool, NULL or missing join
key, a NaN, NULL or map among the projected values, a nested tuple), the general step for that tuple,
resuming, and storing by replay. The stored state is checked by what follows: every later batch — light
or general — must still give the reference's rows, and so must a processor restored from a snapshot taken
after a light run. Rows equal to rows still present (ISTREAM's multiset rule) come from repeated ids.
"""
from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from incremental_util import Ledger
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import pair_batch
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select
from test_generated_kernel_paths import SETTINGS, START, batch_observed
from test_group_batch import counting
from test_paired_step import _observed, input_runs

SELECTS = ["a:id AS aid, b:id AS bid", "a:x AS x, b:x AS y, a:k AS k", "b:id AS v, a:id AS w, a:x AS x",
           "a:id AS aid"]
WINDOWS = [("[RANGE 1 TUPLES]", "[RANGE 3 TUPLES]"), ("[RANGE 4 TUPLES]", "[RANGE 4 TUPLES]"),
           ("[RANGE 6 TUPLES]", "[RANGE 2 TUPLES]")]
KEYS = st.sampled_from([0, 1, 2, "p", 1])
VALUES = st.sampled_from([0, 1, 2, 1.5, "p", "q", -1, 2.0])
ODD = st.sampled_from([None, 2.0, True, float("nan"), {"u": 1}, [1], 1 << 60])  # what stops the loop (mostly)


def _value(draw: Any, common: Any) -> Any:
    return draw(ODD) if draw(st.integers(0, 19)) == 0 else draw(common)


@st.composite
def light_pair_streams(draw: Any) -> list[tuple[str, Any, int]]:
    """(input, data, ms) on s1 / s2 in runs: ids repeat (equal rows), keys mostly match."""
    out = []
    for i in range(draw(st.integers(0, 70))):
        data: Any = {"id": _value(draw, st.sampled_from([i, i, i % 3, "x"])), "k": _value(draw, KEYS),
                     "x": _value(draw, VALUES)}
        if draw(st.integers(0, 25)) == 0:
            del data[draw(st.sampled_from(["id", "k", "x"]))]
        if draw(st.integers(0, 40)) == 0:
            data = {"x": data}
        out.append((draw(st.sampled_from(["s1", "s1", "s2", "s2", "s2"])) if i % 7 == 0 or not out
                    else out[-1][0], data, 10 * i))
    return out


@pytest.fixture(autouse=True)
def _always_light(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pair_batch.LightPairs, "takes", lambda self, n: True)


def _query(items: str, windows: tuple[str, str], emitter: str = "ISTREAM",
           where: str = "WHERE a:k = b:k") -> str:
    return f"SELECT {emitter} {items} FROM s1 {windows[0]} AS a, s2 {windows[1]} AS b {where}"


def check_light(query: str, stream: list[tuple[str, Any, int]], sizes: list[int],
                restore_at: int = -1) -> int:
    """``stream`` in runs of one input cut to ``sizes`` (cycled) through the light loop and tuple by tuple
    through the reference kernel: the same rows, stamps and drops for every tuple. At run ``restore_at``
    the processor continues from its snapshot restored into a fresh one. Returns how many tuples light runs
    took."""
    stmt = parse_select(query)
    light = build_processor(stmt, ProcessorContext())
    reference = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert light.paired is not None and light.paired.light is not None, query
    taken = _counting(light)
    tuples = [Tuple(copy.deepcopy(data), START + dt.timedelta(milliseconds=ms), seq, name)
              for seq, (name, data, ms) in enumerate(stream, 1)]
    ledger = Ledger()
    for k, batch in input_runs(tuples, sizes):
        if k == restore_at:
            blob = light.snapshot()
            light = build_processor(stmt, ProcessorContext())
            light.restore(blob)
            taken = [taken[0]] + _counting(light)
        want = [_observed(reference, t.input, t.data, t.ts, t.seq) for t in batch]
        assert batch_observed(light, batch[0].input, batch, ledger) == want, (query, [t.seq for t in batch])
    ledger.check()
    return sum(taken)


def _counting(proc: Any) -> list[int]:
    return counting(proc.paired.light)


@SETTINGS
@given(st.sampled_from(SELECTS), st.sampled_from(WINDOWS), light_pair_streams(),
       st.lists(st.integers(1, 20), min_size=1, max_size=6), st.integers(-1, 5))
def test_light_runs_equal_the_reference(items, windows, stream, sizes, restore_at):
    check_light(_query(items, windows), stream, sizes, restore_at)


def check_mixed(query: str, stream: list[tuple[str, Any, int]], sizes: list[int]) -> int:
    """``stream`` in chunks of ``sizes`` (cycled) of both inputs through ``process_mixed`` and tuple by
    tuple through the reference kernel: the same rows, stamps and drops for every tuple. Returns how many
    tuples light runs took."""
    stmt = parse_select(query)
    light = build_processor(stmt, ProcessorContext())
    reference = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert light.mixed_entry() is not None, query
    taken = _counting(light)
    tuples = [Tuple(copy.deepcopy(data), START + dt.timedelta(milliseconds=ms), seq, name)
              for seq, (name, data, ms) in enumerate(stream, 1)]
    start, k = 0, 0
    ledger = Ledger()
    while start < len(tuples):
        chunk = tuples[start:start + sizes[k % len(sizes)]]
        want = [_observed(reference, t.input, t.data, t.ts, t.seq) for t in chunk]
        got = []
        for tup, entry in zip(chunk, light.process_mixed(chunk), strict=True):
            got.append(batch_observed(_Answer(entry), tup.input, [tup], ledger)[0])
        assert got == want, (query, [t.seq for t in chunk])
        start, k = start + len(chunk), k + 1
    ledger.check()
    return taken[0]


class _Answer:
    """A processor whose ``process_batch`` answers one given entry (to read it as ``batch_observed`` does)."""

    def __init__(self, entry: Any):
        self.entry = entry

    def process_batch(self, name: str, batch: list[Tuple]) -> list[Any]:
        return [self.entry]


@SETTINGS
@given(st.sampled_from(SELECTS), st.sampled_from(WINDOWS), light_pair_streams(),
       st.lists(st.integers(1, 30), min_size=1, max_size=6), st.booleans())
def test_mixed_runs_equal_the_reference(items, windows, stream, sizes, alternate):
    """``process_mixed`` over chunks of both inputs (tuple by tuple alternating, or in runs)."""
    if alternate:
        stream = [("s1" if i % 2 else "s2", data, ms) for i, (_, data, ms) in enumerate(stream)]
    check_mixed(_query(items, windows), stream, sizes)


def test_the_bench_join_alternating_runs_in_the_light_loop():
    """B3's join, its inputs alternating tuple by tuple: every tuple taken by the light loop."""
    stream = [("s1" if i % 2 == 0 else "s2", _bench_row(i), 10 * i) for i in range(400)]
    query = _query("a:id AS aid, b:id AS bid", ("[RANGE 5 TUPLES]", "[RANGE 5 TUPLES]"))
    assert check_mixed(query, stream, [400]) == 400


def _bench_row(i: int) -> dict[str, int]:
    j = i // 2
    return {"id": j, "k": j % 4 if i % 2 == 0 else (j * 3) % 4}


def test_the_bench_join_runs_in_the_light_loop():
    """B3's join: alternating inputs in runs of 40; every tuple taken by the light loop."""
    stream = []
    for run in range(10):
        name = "s1" if run % 2 == 0 else "s2"
        for i in range(40):
            j = run * 40 + i
            stream.append((name, {"id": j, "k": j % 4 if name == "s1" else (j * 3) % 4}, 10 * j))
    query = _query("a:id AS aid, b:id AS bid", ("[RANGE 5 TUPLES]", "[RANGE 5 TUPLES]"))
    assert check_light(query, stream, [40]) == 400


def test_equal_rows_leaving_and_entering_in_one_step():
    """Rows equal to rows the step removes (the same ids again): ISTREAM emits only the added rows beyond
    the removed ones of their key, the last of them."""
    stream = [("s2", {"id": 1, "k": 0}, 0), ("s2", {"id": 1, "k": 0}, 10)]
    stream += [("s1", {"id": 7, "k": 0}, 20 + 10 * i) for i in range(12)]
    query = _query("a:id AS aid, b:id AS bid", ("[RANGE 2 TUPLES]", "[RANGE 2 TUPLES]"))
    assert check_light(query, stream, [2, 12]) == 14


@pytest.mark.parametrize("query", [
    "SELECT RSTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b "
    "WHERE a:k = b:k",
    "SELECT DSTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b "
    "WHERE a:k = b:k",
    "SELECT ISTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 1 SECONDS] AS a, s2 [RANGE 3 TUPLES] AS b "
    "WHERE a:k = b:k",
    "SELECT ISTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b "
    "WHERE a:k = b:k AND a:x < 2",
    "SELECT ISTREAM a:id + 1 AS aid, b:id AS bid FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b "
    "WHERE a:k = b:k",
    "SELECT ISTREAM a:id AS v, b:id AS v FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b "
    "WHERE a:k = b:k",
])
def test_other_joins_have_no_light_loop(query):
    proc = build_processor(parse_select(query))
    assert proc.paired is None or proc.paired.light is None
    assert "light state" not in proc.kernel_description()  # EXPLAIN says which path runs


def test_explain_names_the_light_loop():
    proc = build_processor(parse_select(_query("a:id AS aid, b:id AS bid", WINDOWS[0])))
    assert "a long run of one input in one loop over light state" in proc.kernel_description()
