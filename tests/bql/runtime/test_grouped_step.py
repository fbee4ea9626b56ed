"""The generated one-FROM-item RSTREAM GROUP BY step (``incremental/group_step.py``) compared row for row
with the reference kernel and with the incremental kernel's general path (``grouped`` switched off).

Random streams hold 2 / 2.0, NaN, NULL, missing fields, bools, strings, maps and arrays (mixed types in
one group key, aggregates that refuse a value, select items that raise); every step's outputs (with
their exact types), stamps and dropped tuples with their error texts must be identical, also when the
processors are snapshotted and restored mid-stream (into fresh processors, across the two paths).
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

from test_generated_kernel_paths import SETTINGS, START, _observed, check_batches, streams

SELECTS = ["a:k, count(*) AS n, sum(a:x) AS total", "a:k AS k, avg(a:x) AS m, count(a:x) AS c",
           "max(a:x) AS hi, min(a:x) AS lo, a:k AS k, median(a:x) AS med",
           "a:k AS k, count(*) AS n, array_agg(a:x) AS xs", "a:k AS k", "a:k + 1 AS k1, sum(a:k) AS sk",
           "count(*) AS n, count(*) AS n, bool_and(a:s = \"p\") AS all_p",
           "sum(a:x * 2) AS twice, a:k AS x, count(*) AS x"]
WHERES = ["", "WHERE a:x < 2", "WHERE a:s = \"p\" OR a:x >= 1", "WHERE a:x + 1 > 1"]
WINDOWS = ["[RANGE 1 TUPLES]", "[RANGE 3 TUPLES]", "[RANGE 6 TUPLES]", "[RANGE 500 MILLISECONDS]",
           "[RANGE 1 SECONDS]"]


# aggregates without GROUP BY: the global group (one group; a row also over zero rows)
GLOBAL_SELECTS = ["count(*) AS n, sum(a:x) AS total", "avg(a:x) AS m, count(a:x) AS c",
                  "max(a:x) AS hi, min(a:x) AS lo, median(a:x) AS med", "count(*) AS n, array_agg(a:x) AS xs",
                  "sum(a:x * 2) AS twice, count(*) AS x, count(*) AS x"]


HAVINGS = ["", " HAVING count(*) > 1", " HAVING max(a:x) >= 1", " HAVING count(*) > 1 OR sum(a:x) < 2"]


def _query(items: str, window: str, where: str, group_by: str = " GROUP BY a:k", emitter: str = "RSTREAM",
           having: str = "") -> str:
    return f"SELECT {emitter} {items} FROM s1 {window} AS a {where}{group_by}{having}"


def _processors(query: str) -> tuple[Any, Any, Any]:
    stmt = parse_select(query)
    fused = build_processor(stmt, ProcessorContext())
    general = build_processor(stmt, ProcessorContext())
    reference = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert isinstance(fused, IncrementalSelectProcessor) and type(reference) is SelectProcessor
    assert fused.grouped is not None, query
    general.grouped = None
    return fused, general, reference


def _counting(proc: Any, name: str = "advance") -> list[int]:
    """Count the steps the generated function ``name`` runs (wraps it on ``proc.grouped``)."""
    calls = [0]
    advance = getattr(proc.grouped, name)

    def counted(tup: Tuple) -> Any:
        calls[0] += 1
        return advance(tup)

    setattr(proc.grouped, name, counted)
    return calls


def run_three(query: str, stream: list[tuple[dict[str, Any], int]], restore_at: int = -1) -> int:
    """All three processors agree at every step; at ``restore_at`` each is snapshotted and its snapshot
    restored into a fresh processor (the fused one's into a general one and back). Returns the number
    of steps the generated function ran."""
    fused, general, reference = _processors(query)
    calls = _counting(fused)
    total = 0
    for seq, (data, ms) in enumerate(stream, 1):
        if seq == restore_at:
            total += calls[0]
            blobs = fused.snapshot(), general.snapshot(), reference.snapshot()
            fused, general, reference = _processors(query)
            fused.restore(blobs[1])  # the general path's state, continued by the generated step
            general.restore(blobs[0])
            reference.restore(blobs[2])
            calls = _counting(fused)
        ts = START + dt.timedelta(milliseconds=ms)
        want = _observed(reference, data, ts, seq)
        assert _observed(general, data, ts, seq) == want, f"step {seq}: {query}"
        assert _observed(fused, data, ts, seq) == want, f"step {seq}: {query}"
    return total + calls[0]


@SETTINGS
@given(st.sampled_from(SELECTS), st.sampled_from(WINDOWS), st.sampled_from(WHERES), streams())
def test_grouped_step_equals_the_reference(items, window, where, stream):
    run_three(_query(items, window, where), stream)


@SETTINGS
@given(st.sampled_from(SELECTS), st.sampled_from(WINDOWS), streams(), st.integers(1, 25))
def test_grouped_step_across_snapshots(items, window, stream, restore_at):
    run_three(_query(items, window, ""), stream, restore_at)


@SETTINGS
@given(st.sampled_from(GLOBAL_SELECTS), st.sampled_from(WINDOWS), st.sampled_from(WHERES), streams(),
       st.integers(0, 25))
def test_the_global_group_equals_the_reference(items, window, where, stream, restore_at):
    """Aggregates without GROUP BY run the generated step too; a WHERE that keeps no row of the window
    gives the group over zero rows (the general path's ``empty_item``) and the next row leaves it —
    also across snapshots."""
    run_three(_query(items, window, where, ""), stream, restore_at)


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM", "RSTREAM"]), st.sampled_from(SELECTS + GLOBAL_SELECTS),
       st.sampled_from(WINDOWS), st.sampled_from(WHERES), st.sampled_from(HAVINGS), streams(),
       st.integers(0, 25))
def test_emitters_and_having_equal_the_reference(emitter, items, window, where, having, stream, restore_at):
    """ISTREAM/DSTREAM (the emitter applies the groups' change) and HAVING (a rejected group has no row;
    HAVING that raises drops the step) on the generated step, keyed or global, across snapshots."""
    group_by = "" if items in GLOBAL_SELECTS else " GROUP BY a:k"
    query = _query(items, window, where, group_by, emitter, having)
    try:
        parse_select(query)
    except Exception:  # noqa: BLE001 - a select list this HAVING cannot go with
        return
    run_three(query, stream, restore_at)


@pytest.mark.parametrize("emitter", ["ISTREAM", "DSTREAM", "RSTREAM"])
@pytest.mark.parametrize("having", HAVINGS)
@pytest.mark.parametrize(("items", "group_by"), [("a:k AS k, count(*) AS n, sum(a:x) AS total", " GROUP BY a:k"),
                                                 ("count(*) AS n, avg(a:x) AS m", "")])
def test_plain_rows_with_each_emitter_and_having(emitter, having, items, group_by):
    """Plain rows (int keys, int and float values, groups coming and going, equal rows in and out): every
    step runs the generated step, and its rows equal the reference's, across a snapshot."""
    for where in ("WHERE a:x < 7", ""):  # (without WHERE, group 3's NULLs make max NULL: HAVING is NULL)
        query = _query(items, "[RANGE 3 TUPLES]", where, group_by, emitter, having)
        stream = [({"k": k, "x": None if k == 3 else [1, 2.5, 9, 0, 3][i % 5]}, 100 * i)
                  for i in range(40) for k in ((i * 5) % 4,)]
        assert run_three(query, stream) == len(stream)
        assert run_three(query, stream, 17) == len(stream)


def test_the_global_group_over_zero_rows_and_back():
    """Rows WHERE drops before, between and after kept ones: the zero-row group's row, then the group's."""
    query = _query("count(*) AS n, sum(a:x) AS total", "[RANGE 2 TUPLES]", "WHERE a:x < 5", "")
    fused, general, _ = _processors(query)
    assert fused.grouped is not None
    calls = _counting(fused)
    stream = [({"x": x}, 100 * i) for i, x in enumerate([9, 9, 1, 2, 9, 9, 9, 3])]
    outs = []
    for seq, (data, ms) in enumerate(stream, 1):
        ts = START + dt.timedelta(milliseconds=ms)
        outs.append(fused.process(Tuple(dict(data), ts, seq, "s1")).outputs)
        general.process(Tuple(dict(data), ts, seq, "s1"))
        # the zero-row group's bookkeeping is the general path's (a snapshot restores either way)
        assert fused.table.empty_done == general.table.empty_done
        assert (fused.table.empty_item is None) == (general.table.empty_item is None)
    assert [[o.data for o in out] for out in outs] == [
        [{"n": 0, "total": None}], [{"n": 0, "total": None}], [{"n": 1, "total": 1}], [{"n": 2, "total": 3}],
        [{"n": 1, "total": 2}], [{"n": 0, "total": None}], [{"n": 0, "total": None}], [{"n": 1, "total": 3}]]
    assert calls[0] == len(stream)
    assert run_three(query, stream) == len(stream)


@SETTINGS
@given(st.lists(st.tuples(st.sampled_from([0, 1, 2, 2.0, "2", None, float("nan"), True]),
                          st.sampled_from([1, 2.5, 2**62, -(2**62), 2**53 + 1, None, "x", float("nan"),
                                           10**400])),
                max_size=30),
       st.sampled_from(["sum(a:x) AS total, max(a:x) AS hi", "avg(a:x) AS m, count(*) AS n"]))
def test_mixed_keys_and_overflowing_sums(pairs, aggregates):
    """Keys of mixed types in one group (2 / 2.0), NaN keys, int sums that leave BQL's int range and an
    int beyond a float's next to a float (each step dropped with the reference's error, "aggregate 'sum'
    failed: ...", while the windows move on)."""
    stream = [({"k": k, "x": x}, 100 * i) for i, (k, x) in enumerate(pairs)]
    run_three(_query(f"a:k AS k, {aggregates}", "[RANGE 4 TUPLES]", ""), stream)


def test_plain_rows_run_the_generated_step():
    """The bench's statement: every step runs the generated function, and it gives the rows of the
    general path (a step that drops falls back only while a row waits for its key)."""
    query = "SELECT RSTREAM k, count(*) AS n, sum(price) AS total FROM src [RANGE 50 TUPLES] GROUP BY k"
    stmt = parse_select(query)
    fused, general = build_processor(stmt), build_processor(stmt)
    general.grouped = None
    assert "one generated step per tuple" in fused.kernel_description()  # EXPLAIN says which path runs
    assert "one generated step" not in general.kernel_description()
    calls = _counting(fused)
    for i in range(200):
        data = {"k": i % 7, "price": [1, 9, 2.5, 8.0][i % 4]}
        ts = START + dt.timedelta(milliseconds=10 * i)
        got = fused.process(Tuple(dict(data), ts, i + 1, "src"))
        want = general.process(Tuple(dict(data), ts, i + 1, "src"))
        assert [(o.data, o.ts, o.seq) for o in got.outputs] == [(o.data, o.ts, o.seq) for o in want.outputs]
        assert [type(v) for o in got.outputs for v in o.data.values()] == \
            [type(v) for o in want.outputs for v in o.data.values()]
    assert calls[0] == 200


def test_a_key_that_raises_leaves_its_row_pending():
    """A group key that raises drops the step and leaves the row pending; the general path takes the
    next step (and drops it again, as the reference does), then the generated step resumes."""
    fused, general, reference = _processors(_query("a:k AS k, count(*) AS n", "[RANGE 3 TUPLES]", ""))
    calls = _counting(fused)
    stream = [({"k": 1}, 0), ({"x": 1}, 100), ({"k": 2}, 200), ({"k": 1}, 300), ({"k": 1}, 400),
              ({"k": 1}, 500)]
    dropped = 0
    for seq, (data, ms) in enumerate(stream, 1):
        ts = START + dt.timedelta(milliseconds=ms)
        want = _observed(reference, data, ts, seq)
        dropped += len(want[1])
        assert _observed(general, data, ts, seq) == want
        assert _observed(fused, data, ts, seq) == want
    assert dropped >= 1
    assert 0 < calls[0] < len(stream)


def test_emitted_maps_are_copies():
    query = "SELECT RSTREAM a:m AS m, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:m"
    proc = build_processor(parse_select(query))
    assert proc.grouped is not None
    data = {"m": {"u": [1]}}
    (first,) = proc.process(Tuple(data, START, 1, "s1")).outputs
    first.data["m"]["u"].append(2)
    (again,) = proc.process(Tuple({"m": {"u": [1]}}, START, 2, "s1")).outputs
    assert again.data == {"m": {"u": [1]}, "n": 2} and data["m"] == {"u": [1]}


@pytest.mark.parametrize("query", [
    "SELECT ISTREAM a:m.u AS u, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:m.u",
    "SELECT RSTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b GROUP BY a:k",
    "SELECT RSTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k LIMIT 4",
    "SELECT RSTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k, a:s",
    "SELECT RSTREAM a:m.u AS u FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:m.u",
])
def test_other_statements_keep_the_general_path(query):
    proc = build_processor(parse_select(query))
    assert isinstance(proc, IncrementalSelectProcessor) and proc.grouped is None


@SETTINGS
@given(st.sampled_from(SELECTS), st.sampled_from(WINDOWS), st.sampled_from(WHERES), streams(),
       st.lists(st.integers(1, 8), min_size=1, max_size=10))
def test_a_batch_answers_what_each_tuple_does(items, window, where, stream, sizes):
    """``process_batch`` (the generated step answering output maps; the general path while a row waits
    for its key) over batches of random sizes gives the reference kernel's rows and drops per tuple."""
    fused, _, reference = _processors(_query(items, window, where))
    check_batches(fused, reference, stream, sizes)


def test_a_batch_of_the_bench_statement_runs_the_generated_rows():
    query = "SELECT RSTREAM k, count(*) AS n, sum(price) AS total FROM src [RANGE 50 TUPLES] GROUP BY k"
    proc = build_processor(parse_select(query))
    proc.grouped.light = None  # a long batch's light loop: test_group_batch.py
    calls = _counting(proc, "advance_rows")
    tuples = [Tuple({"k": i % 7, "price": 1.5}, START, i + 1, "src") for i in range(100)]
    answers = proc.process_batch("src", tuples)
    assert calls[0] == 100 and all(type(a) is list for a in answers)
    assert answers[-1][0] == {"k": 1, "n": 8, "total": 12.0}  # i = 50, 57, ..., 99: the oldest row first
    assert proc.process_batch("other", tuples[:2]) == [None, None]


def test_batch_rows_are_copies_of_the_cached_groups():
    """A host may change an answered row: the processor's cached group rows stay as they were."""
    query = "SELECT RSTREAM a:m AS m, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:m"
    proc = build_processor(parse_select(query))
    assert proc.grouped is not None
    (first,) = proc.process_batch("s1", [Tuple({"k": 1, "m": {"u": [1]}}, START, 1, "s1")])
    first[0]["m"]["u"].append(2)
    first[0]["n"] = 99
    (again,) = proc.process_batch("s1", [Tuple({"k": 2, "m": {"u": [3]}}, START, 2, "s1")])
    assert again == [{"m": {"u": [1]}, "n": 1}, {"m": {"u": [3]}, "n": 1}]
