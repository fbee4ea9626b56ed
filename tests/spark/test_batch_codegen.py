"""``batch_codegen`` and the fast form's batch entry: ``process_batch`` answers, tuple for tuple, what
``process`` answers one by one — the comprehension for the rows inside its guards, the per-tuple step
(``stage_codegen``'s generated step, then the kernel) for a chunk holding any other row.

Hypothesis draws the stages and rows of ``test_stage_codegen`` (comparisons of fields and literals
under AND/OR/NOT, int literals beyond 2**53, NaN, bools, strings, missing fields, paths through values
that are no maps); the answers are compared with their exact types and key order.
"""
from __future__ import annotations

import datetime as _dt

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sbpy.bql.runtime import Tuple
from sbpy.bql.runtime.batch_codegen import generate_batch
from sbpy.bql.runtime.incremental import batches
from sbpy.bql.runtime.processor import StepResult, batch_entry_of
from sbpy.bql.runtime.stage_codegen import fast_parts
from test_stage_codegen import ARITHMETIC, B1, EDGES, LEAF_ROWS, LEAF_WHERES, _build, _strict, leaf_stages, rows, stages

_TS = _dt.datetime(2024, 1, 1, tzinfo=_dt.timezone.utc)


def _tuples(data: list[dict], name: str = "src") -> list[Tuple]:
    return [Tuple(d, _TS + _dt.timedelta(seconds=i), i + 1, name) for i, d in enumerate(data)]


def _answer(entry) -> tuple:
    """(output rows, drops) of one batch entry."""
    if entry is None:
        return [], []
    if type(entry) is dict:
        return [entry], []
    assert isinstance(entry, StepResult), entry
    return [o.data for o in entry.outputs], [(d.error, d.event_type, d.tuple.seq) for d in entry.dropped]


def _one_by_one(proc, tuples: list[Tuple]) -> list[tuple]:
    out = []
    for t in tuples:
        result = proc.process(t)
        out.append(([o.data for o in result.outputs], [(d.error, d.event_type, d.tuple.seq) for d in result.dropped]))
    return out


def _same(got: list[tuple], want: list[tuple]) -> bool:
    return len(got) == len(want) and all(
        len(g[0]) == len(w[0]) and all(_strict(a, b) for a, b in zip(g[0], w[0])) and g[1] == w[1]
        for g, w in zip(got, want))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=stages, data=st.lists(rows, min_size=1, max_size=12))
def test_a_batch_answers_what_each_tuple_does(text, data):
    proc, reference = _build(text), _build(text, reference=True)
    assume(proc is not None)
    entry = batch_entry_of(proc)
    assert entry is not None and proc.batch is not None, text  # every drawn stage has the batch form
    got = [_answer(e) for e in entry("src", _tuples(data))]
    assert _same(got, _one_by_one(reference, _tuples(data))), (text, data, proc.batch.source)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=stages, data=st.lists(rows, min_size=1, max_size=12))
def test_the_comprehension_gives_the_row_of_each_tuple_it_takes(text, data):
    """Row by row (a batch of one): wherever the comprehension answers, it answers the per-tuple row."""
    proc, reference = _build(text), _build(text, reference=True)
    assume(proc is not None)
    for t in _tuples(data):
        try:
            (got,) = proc.batch([t])
        except Exception:
            continue
        assert _same([_answer(got)], _one_by_one(reference, [t])), (text, t.data, proc.batch.source)


EDGE_VALUES = [None, True, False, 0, 1, 2, 2.0, 2.5, -2, 9007199254740992.0, 9007199254740993, -9007199254740993,
               9007199254740993.0, float("nan"), float("inf"), "a", "2", "", [1], {"y": 1}]
EDGE_WHERES = [f"a {op} {lit}" for op in ("=", "!=", "<", ">=") for lit in
               ("2", "2.0", "9007199254740993", "9007199254740992.0", '"a"', "-9007199254740993")] + [
    f"{lit} < a" for lit in ("2", "9007199254740992.0", '"a"')] + [
    f"a {op} b" for op in ("=", "!=", "<", ">=")] + ["NOT (a = 2) OR b > 1.5", "a = 2 AND NOT b = \"a\""]


def test_every_edge_value_against_every_comparison():
    """Each value of ``EDGE_VALUES`` (and each pair, against a second field) through each comparison:
    the comprehension answers a batch of one exactly as the tuple's own step, or refuses it."""
    rows = [{"a": a, "b": b} for a in EDGE_VALUES for b in (2, 2.0, 9007199254740993, "a", None)]
    rows += [{"b": 1}, {"a": 1}]
    for where in EDGE_WHERES:
        text = f"SELECT RSTREAM a, b FROM src [RANGE 1 TUPLES] WHERE {where}"
        proc, reference = _build(text), _build(text, reference=True)
        assert proc is not None and proc.batch is not None, text
        taken = 0
        for t in _tuples(rows):
            try:
                (got,) = proc.batch([t])
            except Exception:
                continue
            taken += 1
            assert _same([_answer(got)], _one_by_one(reference, [t])), (text, t.data, proc.batch.source)
        assert taken, text


ARITHMETIC_VERSUS_LITERAL = ["a * 1 < 9007199254740993", "9007199254740993 > a + 0", "a - 0 = 9007199254740993",
                             "a * 1 = 9007199254740992.0", "-a > -9007199254740993", "a + 0 < 2.5",
                             "2.5 >= -a", "a + 1 <= 3", "a * 2 != 4.0"]


def test_arithmetic_against_number_literals_on_edge_values():
    """Arithmetic meeting an int literal beyond 2**53 or a float literal: BQL compares an int with a
    float as float(int), where Python compares them exactly — the comprehension must answer as the kernel
    on the values where the two differ (2**53 as a float against 2**53 + 1)."""
    values = [9007199254740992.0, 9007199254740993, 9007199254740992, 2, 2.0, 2.5, -0.0, 1.5,
              float("nan"), float("inf"), -9007199254740993]
    for where in ARITHMETIC_VERSUS_LITERAL:
        text = f"SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE {where}"
        proc, reference = _build(text), _build(text, reference=True)
        assert proc is not None and proc.batch is not None, text
        for t in _tuples([{"a": v} for v in values]):
            try:
                (got,) = proc.batch([t])
            except Exception:  # noqa: BLE001, S112 - the per-tuple path decides the row
                continue
            assert _same([_answer(got)], _one_by_one(reference, [t])), (text, t.data, proc.batch.source)


def test_the_bench_statement_runs_as_one_comprehension():
    proc = _build(B1)
    assert "for d in map(DATA, tuples)" in proc.batch.source
    assert "a batch as one list comprehension" in proc.kernel_description()  # EXPLAIN's kernel line
    data = [{"id": i, "price": [7.5, 8, 7, 9.25][i % 4], "x": "y"} for i in range(20)]
    assert proc.batch(_tuples(data)) == [{"id": i, "price": d["price"]} if d["price"] < 8 else None
                                         for i, d in enumerate(data)]


def test_a_refused_row_sends_only_its_chunk_one_by_one():
    """A NULL price among 2,000 typed rows: the chunk holding it runs through ``process`` (the kernel's
    NULL logic: not passed), every other chunk stays in the comprehension."""
    proc, reference = _build(B1), _build(B1, reference=True)
    data = [{"id": i, "price": i % 10} for i in range(2000)]
    data[1500]["price"] = None
    calls = [0]
    process = proc.process

    def counted(tup):
        calls[0] += 1
        return process(tup)

    proc.process = counted
    got = [_answer(e) for e in proc.process_batch("src", _tuples(data))]
    assert _same(got, _one_by_one(reference, _tuples(data)))
    assert calls[0] == batches.BATCH_CHUNK
    assert got[1500] == ([], [])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=leaf_stages, data=st.lists(st.one_of(rows, st.sampled_from(LEAF_ROWS)), min_size=1, max_size=12))
def test_closure_leaves_in_a_batch(text, data):
    """Function calls, casts, CASE, LIKE, IN ... as closure leaves of the comprehension (the incremental
    processor's fast form builds it with ``leaf_scope``): each tuple's answer is the reference kernel's."""
    proc, reference = _build(text), _build(text, reference=True)
    assume(proc is not None)
    entry = batch_entry_of(proc)
    assert entry is not None and proc.batch is not None, text
    got = [_answer(e) for e in entry("src", _tuples(data))]
    assert _same(got, _one_by_one(reference, _tuples(data))), (text, data, proc.batch.source)


@pytest.mark.parametrize("where", LEAF_WHERES + [f"NOT ({w})" for w in LEAF_WHERES]
                         + [f"({w}) OR b < 1" for w in LEAF_WHERES])
def test_closure_leaf_predicates_on_edge_rows_in_a_batch(where):
    """NULL, MISSING, bools, containers, NaN under a leaf predicate, negated and under OR, in one batch and
    each row alone: the reference kernel's answers."""
    text = f"SELECT RSTREAM a, b FROM src [RANGE 1 TUPLES] WHERE {where}"
    assert _batch_and_each_row(text, [{**row, "b": 2} for row in LEAF_ROWS]) >= 2, where


def _batch_and_each_row(text: str, data: list[dict]) -> int:
    """``data`` through ``text``'s batch entry in one call and through its comprehension row by row, each
    answer the reference kernel's; returns how many rows the comprehension decided itself."""
    proc, reference = _build(text), _build(text, reference=True)
    want = _one_by_one(reference, _tuples(data))
    assert _same([_answer(e) for e in proc.process_batch("src", _tuples(data))], want)
    decided = 0
    for t, one in zip(_tuples(data), want):
        try:
            (got,) = proc.batch([t])
        except Exception:  # noqa: BLE001, S112 - the per-tuple path decides the row
            continue
        decided += 1
        assert _same([_answer(got)], [one]), t.data
    return decided


def test_arithmetic_edges_in_one_batch():
    """Go's integer division and remainder, int64 overflow, zero divisors, IEEE values (``EDGES``), each
    row also alone: the comprehension answers the per-tuple rows, and the plain rows through it."""
    assert _batch_and_each_row(ARITHMETIC, [{"a": a, "b": b} for a, b in EDGES]) >= 10


def test_another_input_answers_nothing():
    proc = _build(B1)
    assert proc.process_batch("other", _tuples([{"id": 1, "price": 1}], "other")) == [None]


def test_outside_the_subset_there_is_no_batch_entry():
    """``ts()`` is never a closure leaf; without leaves, IS NULL is outside the comprehension's subset."""
    assert batch_entry_of(_build("SELECT RSTREAM str(ts()) AS x FROM src [RANGE 1 TUPLES]")) is None
    assert batch_entry_of(_build("SELECT ISTREAM str(ts()) AS b FROM src [RANGE 2 TUPLES]")) is None
    assert generate_batch(*fast_parts(_build("SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a IS NULL"))) \
        is None


def test_a_field_read_only_on_some_rows_is_not_reused():
    """``b`` is read by the WHERE only when ``a < 1`` is false: the select list reads it itself."""
    proc = _build("SELECT RSTREAM b FROM src [RANGE 1 TUPLES] WHERE a < 1 OR b < 2")
    data = [{"a": 3, "b": 1}, {"a": 0, "b": 5}, {"a": 3, "b": 3}]
    assert proc.batch(_tuples(data)) == [{"b": 1}, {"b": 5}, None]
