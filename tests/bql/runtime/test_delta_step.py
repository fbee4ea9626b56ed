"""The fused ISTREAM / DSTREAM step of one FROM item (``incremental/delta_step.py``) compared row for row
with the reference kernel and with the incremental kernel's general path (``delta_step`` switched off).

Random streams hold 2 / 2.0, NaN, NULL, missing fields, bools, strings, maps and arrays (rows whose key
equals the leaving row's, NaN rows that force ``DeltaEmitter.apply``, rows the generated row step does
not decide, WHERE that raises), timestamps that repeat and go back (a time window leaves its ordered
head pruning); every step's outputs with their exact types, stamps and dropped tuples with their error
texts must be identical, also across snapshot / restore into fresh processors of the other path.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import IncrementalSelectProcessor
from sbpy.bql.runtime.kernel import SelectProcessor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select
from test_generated_kernel_paths import SETTINGS, START, VALUES, check_batches
from test_paired_step import _observed as observed_on

SELECTS = ["x, k", "x AS a, s AS b", "k, m", "1 AS one, x", "x.u AS u, s"]
WHERES = ["", "WHERE x < 2", "WHERE k = 1 OR s = \"p\"", "WHERE NOT x >= 1", "WHERE x.u = 1"]
WINDOWS = ["[RANGE 1 TUPLES]", "[RANGE 2 TUPLES]", "[RANGE 5 TUPLES]", "[RANGE 500 MILLISECONDS]",
           "[RANGE 1 SECONDS]"]


@st.composite
def streams(draw: Any) -> list[tuple[dict[str, Any], int]]:
    """(data, timestamp in ms): small values repeat (equal keys), any value at times, time goes back."""
    out = []
    ts = 0
    for i in range(draw(st.integers(0, 40))):
        ts = max(0, ts + draw(st.sampled_from([0, 100, 250, 600, -300])))
        data: dict[str, Any] = {"id": i}
        for f, values in (("x", st.one_of(st.sampled_from([0, 1, 2, 2.0]), VALUES)),
                          ("k", st.one_of(st.sampled_from([1, 2]), VALUES)), ("s", VALUES), ("m", VALUES)):
            if draw(st.integers(0, 9)):
                data[f] = draw(values)
        out.append((data, ts))
    return out


def _observed(proc: Any, data: dict[str, Any], ts: dt.datetime, seq: int) -> tuple[Any, ...]:
    return observed_on(proc, "s1", data, ts, seq)


def _processors(query: str) -> tuple[Any, Any, Any]:
    stmt = parse_select(query)
    fused, general = build_processor(stmt, ProcessorContext()), build_processor(stmt, ProcessorContext())
    reference = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert isinstance(fused, IncrementalSelectProcessor) and type(reference) is SelectProcessor
    assert fused.delta_step is not None, query
    general.delta_step = None
    return fused, general, reference


class _Counted:
    """A ``DeltaStep`` that counts the steps it ran itself (not handed back as None)."""

    def __init__(self, step: Any, ran: list[int]):
        self.step, self.ran = step, ran

    def advance(self, tup: Tuple) -> Any:
        out = self.step.advance(tup)
        self.ran[0] += out is not None
        return out


def _counting(proc: Any) -> list[int]:
    ran = [0]
    proc.delta_step = _Counted(proc.delta_step, ran)
    return ran


def run_three(query: str, stream: list[tuple[dict[str, Any], int]], restore_at: int = -1) -> int:
    """Feed ``stream`` to the fused step, the general path and the reference; the steps the fused one ran."""
    fused, general, reference = _processors(query)
    ran = _counting(fused)
    total = 0
    for seq, (data, ms) in enumerate(stream, 1):
        if seq == restore_at:
            total += ran[0]
            blobs = fused.snapshot(), general.snapshot(), reference.snapshot()
            fused, general, reference = _processors(query)
            fused.restore(blobs[1])
            general.restore(blobs[0])
            reference.restore(blobs[2])
            ran = _counting(fused)
        ts = START + dt.timedelta(milliseconds=ms)
        want = _observed(reference, data, ts, seq)
        assert _observed(general, data, ts, seq) == want, f"step {seq}: {query}"
        assert _observed(fused, data, ts, seq) == want, f"step {seq}: {query}"
    return total + ran[0]


def _query(emitter: str, items: str, window: str, where: str) -> str:
    return f"SELECT {emitter} {items} FROM s1 {window} {where}"


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM"]), st.sampled_from(SELECTS), st.sampled_from(WINDOWS),
       st.sampled_from(WHERES), streams())
def test_delta_step_equals_the_reference(emitter, items, window, where, stream):
    run_three(_query(emitter, items, window, where), stream)


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM"]), st.sampled_from(SELECTS), st.sampled_from(WINDOWS),
       streams(), st.integers(1, 40))
def test_delta_step_across_snapshots(emitter, items, window, stream, restore_at):
    run_three(_query(emitter, items, window, "WHERE x < 2"), stream, restore_at)


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM"]), st.sampled_from(SELECTS), st.sampled_from(WINDOWS),
       st.sampled_from(WHERES), streams(), st.lists(st.integers(1, 8), min_size=1, max_size=10))
def test_a_batch_answers_what_each_tuple_does(emitter, items, window, where, stream, sizes):
    """``process_batch`` (the fused step answering output maps; the general path where it hands a step
    back) over batches of random sizes gives the reference kernel's rows and drops per tuple."""
    fused, _, reference = _processors(_query(emitter, items, window, where))
    check_batches(fused, reference, stream, sizes)


def test_batch_rows_are_copies_of_the_relation_rows():
    """A host may change an answered row: the row the relation keeps (which DSTREAM emits when it leaves)
    does not change with it."""
    for emitter, data in (("ISTREAM", {"m": {"u": [3]}}), ("DSTREAM", {"m": {"u": [1]}})):
        fused, _, _ = _processors(_query(emitter, "m", "[RANGE 1 TUPLES]", ""))
        fused.process_batch("s1", [Tuple({"m": {"u": [1]}}, START, 1, "s1")])
        (rows,) = fused.process_batch("s1", [Tuple({"m": {"u": [3]}}, START, 2, "s1")])
        assert rows == [data]
        rows[0]["m"]["u"].append(2)
        assert [row.data for row in fused.relation.rows.values()] == [{"m": {"u": [3]}}]


@pytest.mark.parametrize("emitter", ["ISTREAM", "DSTREAM"])
@pytest.mark.parametrize("window", ["[RANGE 3 TUPLES]", "[RANGE 1 SECONDS]"])
def test_plain_rows_run_the_fused_step(emitter, window):
    """The bench's rows (distinct ints and floats, time in order): the fused step runs every step; rows
    that repeat a key (the leaving row's, or one still in the window), a WHERE that is false and a NaN
    row are in the stream too, and the rows equal the reference's."""
    query = _query(emitter, "id, x", window, "WHERE x < 5")
    stream = [({"id": i % 7, "x": float(i % 6) if i != 20 else float("nan")}, 150 * i) for i in range(60)]
    fused, general, _ = _processors(query)
    assert "one fused step per tuple" in fused.kernel_description()  # EXPLAIN says which path runs
    assert "one fused step per tuple" not in general.kernel_description()
    ran = run_three(query, stream)
    assert ran >= len(stream) - 10  # the general path runs only while NaN rows sit in the relation


def test_out_of_order_time_and_equal_keys_fall_back_exactly():
    """A tuple older than the window's last makes the window prune by scanning; the same row twice in a
    row leaves and enters the same key: both steps end up in ``DeltaEmitter.apply``."""
    stream = [({"x": 1, "k": 1}, 0), ({"x": 1, "k": 1}, 100), ({"x": 1, "k": 1}, 2000),
              ({"x": 0, "k": 2}, 1500),
              ({"x": 1, "k": 1}, 2600), ({"x": 1, "k": 1}, 2700), ({"x": 0, "k": 1}, 4000)]
    for emitter in ("ISTREAM", "DSTREAM"):
        assert run_three(_query(emitter, "x, k", "[RANGE 1 SECONDS]", ""), stream) > 0
        assert run_three(_query(emitter, "x, k", "[RANGE 2 TUPLES]", ""), stream) > 0


def test_a_time_window_keeps_the_tuple_exactly_at_its_start():
    """``[RANGE 500 MILLISECONDS]`` holds ``ts - 500 ms`` itself (both ends inclusive): at 1000 ms the
    tuple of 500 ms stays, the one of 499 ms leaves."""
    stream = [({"x": 0}, 0), ({"x": 1}, 499), ({"x": 2}, 500), ({"x": 3}, 999), ({"x": 4}, 1000),
              ({"x": 5}, 1500), ({"x": 6}, 2000)]
    for emitter in ("ISTREAM", "DSTREAM"):
        assert run_three(_query(emitter, "x", "[RANGE 500 MILLISECONDS]", ""), stream) == len(stream)


def test_dstream_emits_the_last_row_of_the_key_that_shrank():
    """2 and 2.0 are one key: when the first of them leaves, DSTREAM emits the key's last row (2.0)."""
    stream = [({"x": 2}, 0), ({"x": 2.0}, 100), ({"x": 3}, 200), ({"x": 4}, 300), ({"x": 5}, 400)]
    assert run_three(_query("DSTREAM", "x", "[RANGE 3 TUPLES]", ""), stream) == len(stream)


def test_an_older_snapshot_with_entry_lists():
    """A relation from an older snapshot maps an entry to a list of rows: the fused step drops those
    entries through ``Relation.drop_entry`` and still emits the reference's rows."""
    query = _query("DSTREAM", "x", "[RANGE 3 TUPLES]", "")
    fused, general, reference = _processors(query)
    stream = [({"x": i % 4}, 100 * i) for i in range(12)]
    for seq, (data, ms) in enumerate(stream, 1):
        ts = START + dt.timedelta(milliseconds=ms)
        if seq == 4:
            by_eid = fused.relation.by_eid
            for eid, row in list(by_eid.items()):
                by_eid[eid] = [row]
        want = _observed(reference, data, ts, seq)
        assert _observed(general, data, ts, seq) == want and _observed(fused, data, ts, seq) == want
        assert not fused.relation.removed and not fused.relation.added  # no change log left behind


@pytest.mark.parametrize("query", [
    "SELECT RSTREAM x FROM s1 [RANGE 3 TUPLES]",
    "SELECT ISTREAM k, count(*) AS n FROM s1 [RANGE 3 TUPLES] GROUP BY k",
    "SELECT ISTREAM x FROM s1 [RANGE 3 TUPLES] LIMIT 2",
    "SELECT ISTREAM str(ts()) AS y FROM s1 [RANGE 3 TUPLES]",  # ts(): no leaf, no generated row step
    "SELECT ISTREAM a:x FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b WHERE a:k = b:k",
])
def test_other_statements_keep_the_general_path(query):
    proc = build_processor(parse_select(query))
    assert isinstance(proc, IncrementalSelectProcessor) and proc.delta_step is None


@pytest.mark.parametrize("query, stream", [
    ("SELECT RSTREAM x FROM s1 [RANGE 1 TUPLES] WHERE x < 2", [("s1", {"x": 5}), ("s2", {"x": 1})]),
    ("SELECT ISTREAM x FROM s1 [RANGE 2 TUPLES] WHERE x < 2",
     [("s1", {"x": 5}), ("s1", {"x": 6}), ("s2", {"x": 1})]),
    ("SELECT ISTREAM a:x AS x FROM s1 [RANGE 2 TUPLES] AS a, s2 [RANGE 2 TUPLES] AS b WHERE a:k = b:k",
     [("s1", {"x": 1, "k": 1}), ("s2", {"x": 2, "k": 2})]),
])
def test_a_quiet_step_returns_the_shared_empty_result(query, stream):
    """A step that emits and drops nothing returns ``processor.NOTHING`` (no new result per tuple); the
    shared result cannot be changed by whoever reads it."""
    from sbpy.bql.runtime.processor import NOTHING

    proc = build_processor(parse_select(query))
    for seq, (name, data) in enumerate(stream, 1):
        assert proc.process(Tuple(data, START, seq, name)) is NOTHING
    with pytest.raises(TypeError):
        NOTHING.outputs.append(None)


def test_step_results_own_their_lists():
    """``StepResult``'s written-out ``__init__``: each result gets lists of its own, as the dataclass's
    ``default_factory`` gave them; given lists are kept; equality and ``replace`` still work."""
    import dataclasses

    from sbpy.bql.runtime.processor import StepResult

    a, b = StepResult(), StepResult()
    a.outputs.append(1)
    a.dropped.append(2)
    assert b.outputs == [] and b.dropped == [] and not b.done
    given = [Tuple({}, START)]
    c = StepResult(given, done=True)
    assert c.outputs is given and c.dropped == [] and c.done
    assert StepResult([], [], False) == StepResult() != c
    assert dataclasses.replace(c, done=False) == StepResult(given)
