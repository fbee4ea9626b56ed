"""The join step of two hash-joined FROM items (``incremental/pair_step.py``, with ``stage_codegen``'s
``generate_pair`` projection) compared row for row with the reference kernel and with the incremental
kernel's general path (``paired`` switched off).

Random streams on two inputs hold 2 / 2.0, NaN, NULL, missing fields, bools, strings, maps and arrays
(join keys that never match, irregular entries that force the full product, projections that fall
back or raise); every step's outputs with their exact types, stamps and dropped tuples with their error
texts must be identical, also across snapshot / restore into fresh processors of the other path.
"""
from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from incremental_util import Ledger
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import IncrementalSelectProcessor
from sbpy.bql.runtime.kernel import SelectProcessor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.stage_codegen import FALLBACK, generate_pair
from sbpy.bql.runtime.testing import parse_select
from test_generated_kernel_paths import SETTINGS, START, VALUES, batch_observed, canonical

SELECTS = ["a:id AS aid, b:id AS bid", "a:x AS x, b:x AS y, a:k AS k", "a:m AS m, b:id AS v, a:id AS v",
           "1 AS one, a:id AS aid, \"c\" AS c", "a:x + b:x AS sum", "str(a:x) AS s, b:id AS bid",
           "CASE WHEN a:x > 1 THEN b:m ELSE a:id END AS c, a:x || b:x AS cat"]
WHERES = ["WHERE a:k = b:k", "WHERE a:k = b:k AND a:x < 2", "WHERE b:k = a:k AND b:x >= 1",
          "WHERE a:k = b:k AND a:x = b:x"]
WINDOWS = ["[RANGE 2 TUPLES]", "[RANGE 5 TUPLES]", "[RANGE 500 MILLISECONDS]", "[RANGE 1 SECONDS]"]


@st.composite
def pair_streams(draw: Any) -> list[tuple[str, dict[str, Any], int]]:
    """(input, data, timestamp in ms) on s1 / s2: keys mostly small ints (matches), any value at times."""
    out = []
    ts = 0
    for i in range(draw(st.integers(0, 30))):
        ts = max(0, ts + draw(st.sampled_from([0, 100, 250, 600, -300])))
        data: dict[str, Any] = {"id": i}
        for f, values in (("k", st.one_of(st.sampled_from([0, 1, 2, 2.0]), VALUES)), ("x", VALUES),
                          ("m", VALUES)):
            if draw(st.integers(0, 9)):
                data[f] = draw(values)
        out.append((draw(st.sampled_from(["s1", "s2"])), data, ts))
    return out


def _observed(proc: Any, name: str, data: dict[str, Any], ts: dt.datetime, seq: int) -> tuple[Any, ...]:
    result = proc.process(Tuple(copy.deepcopy(data), ts, seq, name))
    return ([(canonical(t.data), t.ts, t.seq, t.input) for t in result.outputs],
            [(d.error, d.event_type, d.tuple.seq) for d in result.dropped], result.done)


def _processors(query: str, plain: bool = True) -> tuple[Any, Any, Any]:
    """The paired step, the general path and the reference; ``plain=False``: the paired step without its
    inline form (``PairedStep.advance_rows_plain``) where it has one."""
    stmt = parse_select(query)
    fused, general = build_processor(stmt, ProcessorContext()), build_processor(stmt, ProcessorContext())
    reference = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert isinstance(fused, IncrementalSelectProcessor) and type(reference) is SelectProcessor
    assert fused.paired is not None, query
    if not plain:
        fused.paired.advance_rows = fused.paired.advance_rows_general
    general.paired = None
    return fused, general, reference


class _Counted:
    """A ``PairedStep`` that counts the steps it runs."""

    def __init__(self, step: Any, calls: list[int]):
        self.step, self.calls = step, calls

    def advance(self, tup: Tuple, k: int) -> Any:
        self.calls[0] += 1
        return self.step.advance(tup, k)


def _counting(proc: Any) -> list[int]:
    calls = [0]
    proc.paired = _Counted(proc.paired, calls)
    return calls


def run_three(query: str, stream: list[tuple[str, dict[str, Any], int]], restore_at: int = -1,
              plain: bool = True) -> int:
    fused, general, reference = _processors(query, plain)
    calls = _counting(fused)
    total = 0
    for seq, (name, data, ms) in enumerate(stream, 1):
        if seq == restore_at:
            total += calls[0]
            blobs = fused.snapshot(), general.snapshot(), reference.snapshot()
            fused, general, reference = _processors(query, plain)
            fused.restore(blobs[1])
            general.restore(blobs[0])
            reference.restore(blobs[2])
            calls = _counting(fused)
        ts = START + dt.timedelta(milliseconds=ms)
        want = _observed(reference, name, data, ts, seq)
        assert _observed(general, name, data, ts, seq) == want, f"step {seq}: {query}"
        assert _observed(fused, name, data, ts, seq) == want, f"step {seq}: {query}"
    return total + calls[0]


def _query(emitter: str, items: str, window: str, where: str) -> str:
    return f"SELECT {emitter} {items} FROM s1 {window} AS a, s2 {window} AS b {where}"


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM", "RSTREAM"]), st.sampled_from(SELECTS),
       st.sampled_from(WINDOWS), st.sampled_from(WHERES), pair_streams())
def test_paired_step_equals_the_reference(emitter, items, window, where, stream):
    run_three(_query(emitter, items, window, where), stream)


@SETTINGS
@given(st.sampled_from(["ISTREAM", "RSTREAM"]), st.sampled_from(SELECTS), st.sampled_from(WINDOWS),
       pair_streams(), st.integers(1, 30))
def test_paired_step_across_snapshots(emitter, items, window, stream, restore_at):
    run_three(_query(emitter, items, window, "WHERE a:k = b:k"), stream, restore_at)


@given(st.sampled_from(["ISTREAM", "DSTREAM", "RSTREAM"]), st.sampled_from(SELECTS),
       st.sampled_from(WINDOWS[:2]), st.booleans(), pair_streams(), st.integers(-1, 30))
@SETTINGS
def test_the_inline_step_of_two_count_windows(emitter, items, window, plain, stream, restore_at):
    """Two count windows joined on one plain-field equality take the inline step
    (``advance_rows_plain``); it and the paired step's general form equal the reference, also across
    snapshots."""
    query = _query(emitter, items, window, "WHERE a:k = b:k")
    assert _processors(query)[0].paired.plain
    run_three(query, stream, restore_at, plain)


def test_the_inline_step_covers_only_its_statements():
    """A time window, a second conjunct or a computed key keep the paired step's general form."""
    for window, where in (("[RANGE 1 SECONDS]", "WHERE a:k = b:k"), ("[RANGE 5 TUPLES]", "WHERE a:k = b:k AND a:x < 2"),
                          ("[RANGE 5 TUPLES]", "WHERE a:k + 1 = b:k")):
        fused = _processors(_query("ISTREAM", SELECTS[0], window, where))[0]
        assert not fused.paired.plain and fused.paired.advance_rows == fused.paired.advance_rows_general


def test_the_bench_join_runs_the_generated_step():
    """Plain rows (the bench's join): every step runs the paired step and its projection decides every
    row (no fallback); the rows equal the general path's."""
    query = ("SELECT ISTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 5 TUPLES] AS a, s2 [RANGE 5 TUPLES] AS b "
             "WHERE a:k = b:k")
    fused, general, reference = _processors(query)
    assert fused.paired.plain  # the inline step
    assert "generated pair projection" in fused.kernel_description()  # EXPLAIN says which path runs
    assert "generated pair projection" not in general.kernel_description()
    step = fused.paired
    calls = _counting(fused)
    project = step.project
    decided = [0]

    def counting(d0: Any, d1: Any) -> Any:
        out = project(d0, d1)
        decided[0] += out is not FALLBACK
        return out

    step.project = counting
    stream = [("s1" if i % 2 == 0 else "s2", {"id": i // 2, "k": (i // 2) % 4 if i % 2 == 0 else (i // 2 * 3) % 4},
               10 * i) for i in range(120)]
    rows = 0
    for seq, (name, data, ms) in enumerate(stream, 1):
        ts = START + dt.timedelta(milliseconds=ms)
        want = _observed(reference, name, data, ts, seq)
        rows += len(want[0])
        assert _observed(general, name, data, ts, seq) == want
        assert _observed(fused, name, data, ts, seq) == want
    assert calls[0] == len(stream) and rows > 0 and decided[0] >= rows


def test_a_projection_that_raises_leaves_rows_pending():
    """``a:ts()`` is never a closure leaf: such a statement keeps the general path; a field projection over
    a non-map value falls back per row and the general tail raises the reference's error."""
    assert build_processor(parse_select(_query("ISTREAM", "a:ts() AS t", "[RANGE 3 TUPLES]",
                                               "WHERE a:k = b:k"))).paired is None
    query = _query("ISTREAM", "a:x.y AS y, b:id AS bid", "[RANGE 3 TUPLES]", "WHERE a:k = b:k")
    stream = [("s1", {"id": 0, "k": 1, "x": {"y": 1}}), ("s2", {"id": 1, "k": 1}),
              ("s1", {"id": 2, "k": 1, "x": 5}), ("s2", {"id": 3, "k": 1}), ("s2", {"id": 4, "k": 2}),
              ("s1", {"id": 5, "k": 2, "x": {"y": 2.0}})]
    timed = [(n, d, 100 * i) for i, (n, d) in enumerate(stream)]
    assert 0 < run_three(query, timed) < len(stream)  # the general path runs while a row is pending
    reference = build_processor(parse_select(query), ProcessorContext(kernel="reference"))
    drops = [_observed(reference, n, d, START + dt.timedelta(milliseconds=ms), seq)[1]
             for seq, (n, d, ms) in enumerate(timed, 1)]
    assert any(drops)  # the row of entry 2 raises: the step drops, later steps too while it is present


@SETTINGS
@given(st.sampled_from(SELECTS), st.dictionaries(st.sampled_from(["id", "k", "x", "m"]), VALUES),
       st.dictionaries(st.sampled_from(["id", "k", "x", "m"]), VALUES))
def test_generate_pair_equals_the_select_list(items, d0, d1):
    """The generated projection gives the compiled select list's row (types, copies) or FALLBACK."""
    proc = build_processor(parse_select(_query("RSTREAM", items, "[RANGE 2 TUPLES]", "WHERE a:k = b:k")))
    out = proc.paired.project(d0, d1)
    from sbpy.bql.eval import Env
    try:
        want = proc.select_list.evaluate(Env({"a": Tuple(d0, START), "b": Tuple(d1, START)}))
    except Exception:
        assert out is FALLBACK
        return
    if out is not FALLBACK:
        assert canonical(out) == canonical(want) and list(out) == list(want)
        for key, value in out.items():
            if isinstance(value, (dict, list)):
                assert value is not d0.get(key) and value is not d1.get(key)


@pytest.mark.parametrize("query", [
    "SELECT ISTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b",
    "SELECT ISTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b "
    "WHERE a:k = b:k GROUP BY a:k",
    "SELECT ISTREAM * FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b WHERE a:k = b:k",
    "SELECT ISTREAM a:id AS aid FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b WHERE a:k = b:k LIMIT 2",
])
def test_other_statements_keep_the_general_path(query):
    proc = build_processor(parse_select(query))
    assert isinstance(proc, IncrementalSelectProcessor) and proc.paired is None
    assert generate_pair([], ("a", "b")) is not None  # the empty select list is in the subset


def run_batches(query: str, stream: list[tuple[str, dict[str, Any], int]], sizes: list[int]) -> None:
    """``stream`` through ``process_batch`` in runs of one input each cut to ``sizes`` (cycled), and
    through the reference kernel tuple by tuple: the same rows, stamps and drops for every tuple."""
    fused, _, reference = _processors(query)
    tuples = [Tuple(copy.deepcopy(data), START + dt.timedelta(milliseconds=ms), seq, name)
              for seq, (name, data, ms) in enumerate(stream, 1)]
    ledger = Ledger()
    for _, batch in input_runs(tuples, sizes):
        want = [_observed(reference, t.input, t.data, t.ts, t.seq) for t in batch]
        assert batch_observed(fused, batch[0].input, batch, ledger) == want, (query, [t.seq for t in batch])
    ledger.check()


def input_runs(tuples: list[Tuple], sizes: list[int]) -> Iterator[tuple[int, list[Tuple]]]:
    """``tuples`` cut into runs of one input each, at most ``sizes`` (cycled) long: (run number, run)."""
    start, k = 0, 0
    while start < len(tuples):
        name = tuples[start].input
        end = start
        while end < len(tuples) and end - start < sizes[k % len(sizes)] and tuples[end].input == name:
            end += 1
        yield k, tuples[start:end]
        start, k = end, k + 1


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM", "RSTREAM"]), st.sampled_from(SELECTS),
       st.sampled_from(WINDOWS), st.sampled_from(WHERES), pair_streams(),
       st.lists(st.integers(1, 6), min_size=1, max_size=4))
def test_a_batch_answers_what_each_tuple_does(emitter, items, window, where, stream, sizes):
    """``process_batch`` (the paired step answering output maps; the general path while a row waits for its
    projection) over runs of random sizes gives the reference kernel's rows and drops per tuple."""
    run_batches(_query(emitter, items, window, where), stream, sizes)


def test_a_batch_of_plain_rows_and_of_uncommon_ones():
    """The bench's rows (ints, every step on the inline path) and rows that leave it — NaN rows, a key
    that is a float, a bool, NULL or missing, a projection falling back, a row equal to one still
    present — in runs of several tuples, with every emitter."""
    plain = [("s1" if i % 3 else "s2", {"id": i // 2, "k": i % 4}, 10 * i) for i in range(80)]
    odd_values = [float("nan"), 1.0, True, None, "1", {"u": 1}]
    odd = [(name, dict(d, k=odd_values[i % 6]) if i % 5 == 0 else dict(d, x=odd_values[i % 6]), ms)
           for i, (name, d, ms) in enumerate(plain)]
    again = [(name, {"id": 1, "k": d["k"]}, ms) for name, d, ms in plain]
    for emitter in ("ISTREAM", "DSTREAM", "RSTREAM"):
        for stream in (plain, odd, again):
            for items in ("a:id AS aid, b:id AS bid", "a:x AS x, b:id AS bid"):
                run_batches(_query(emitter, items, "[RANGE 4 TUPLES]", "WHERE a:k = b:k"), stream, [3, 1, 5])
            run_batches(_query(emitter, "a:id AS aid, b:x AS bx", "[RANGE 300 MILLISECONDS]",
                               "WHERE a:k = b:k AND b:id >= 0"), stream, [4])


def test_batch_rows_holding_maps_are_copies_of_the_relation_rows():
    """A row holding a map or array is answered as its own deep copy (``relation.emitted``): changing it
    leaves the relation's row (which DSTREAM emits when it leaves) as it was."""
    for emitter in ("ISTREAM", "RSTREAM"):
        fused, _, _ = _processors(_query(emitter, "a:m AS m, b:id AS bid", "[RANGE 1 TUPLES]", "WHERE a:k = b:k"))
        fused.process_batch("s1", [Tuple({"k": 1, "m": {"u": [1]}}, START, 1, "s1")])
        (rows,) = fused.process_batch("s2", [Tuple({"k": 1, "id": 7}, START, 2, "s2")])
        assert rows == [{"m": {"u": [1]}, "bid": 7}]
        rows[0]["m"]["u"].append(2)
        assert [row.data for row in fused.relation.rows.values()] == [{"m": {"u": [1]}, "bid": 7}]
