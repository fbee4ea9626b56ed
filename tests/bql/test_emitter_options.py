"""SensorBee's emitter options: ``SELECT RSTREAM [LIMIT n]``, ``[EVERY k-TH TUPLE]``,
``[EVERY x SECONDS|MILLISECONDS]``, ``[SAMPLE x%]`` and ``[<sampling> LIMIT n]`` (bql.peg
``EmitterOptions``; semantics of bql_box.go).

The runtime is checked against a reference model: the same query without options gives a list of
output tuples, and the option is applied to that list (every k-th from the first, the first n, a
seeded sample). Time-based sampling is driven by an injected clock (``tick(now)``), never by sleeping.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbpy.bql.ast import EmitterOption, Select
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError, BQLSyntaxError
from sbpy.bql.parser import parse_one
from sbpy.bql.plan.planner import describe_stage
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.emitter_options import EmitterOptionsProcessor
from sbpy.bql.runtime.testing import parse_select, run_processor, run_query, run_query_detailed

# ---------------------------------------------------------------------------- parsing

SENSORBEE_FORMS = [  # the parser tests of sensorbee core/bql/parser/assemble_emitter_test.go
    "SELECT ISTREAM [LIMIT 7] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [EVERY 2-ND TUPLE] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [EVERY 200 MILLISECONDS] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [EVERY 2.5 MILLISECONDS] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [EVERY 2 SECONDS] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [EVERY 2.5 SECONDS] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [SAMPLE 20%] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [SAMPLE 0.01%] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT ISTREAM [EVERY 2-ND TUPLE LIMIT 7] 2 FROM a [RANGE 1 TUPLES]",
    "SELECT RSTREAM [SAMPLE 50% LIMIT 1] 2 FROM a [RANGE 1 TUPLES]",
]


@pytest.mark.parametrize("text", SENSORBEE_FORMS)
def test_sensorbee_forms_parse_and_unparse_to_themselves(text):
    stmt = parse_one(text)
    assert stmt.emitter_options
    assert unparse(stmt) == text
    assert parse_one(unparse(stmt)) == stmt


@pytest.mark.parametrize("text, options", [
    ("SELECT rstream [limit 3] 1 FROM a [RANGE 1 TUPLES]", (EmitterOption("limit", 3),)),
    ("SELECT RSTREAM[EVERY 3RD TUPLE]1 FROM a [RANGE 1 TUPLES]", (EmitterOption("every_tuple", 3, suffix="RD"),)),
    ("SELECT RSTREAM [ every 4 - th tuple ] 1 FROM a [RANGE 1 TUPLES]",
     (EmitterOption("every_tuple", 4, suffix="TH"),)),
    # the peg accepts any ordinal suffix for any number
    ("SELECT RSTREAM [EVERY 5-ST TUPLE] 1 FROM a [RANGE 1 TUPLES]", (EmitterOption("every_tuple", 5, suffix="ST"),)),
    ("SELECT RSTREAM [SAMPLE 12.5 %] 1 FROM a [RANGE 1 TUPLES]", (EmitterOption("sample", 12.5),)),
    ("SELECT RSTREAM [EVERY 3 milliseconds LIMIT 2] 1 FROM a [RANGE 1 TUPLES]",
     (EmitterOption("every_time", 3, unit="milliseconds"), EmitterOption("limit", 2))),
    ("SELECT RSTREAM [LIMIT -1] 1 FROM a [RANGE 1 TUPLES]", (EmitterOption("limit", -1),)),  # the analyzer refuses it
])
def test_spellings(text, options):
    assert parse_one(text).emitter_options == options


def test_a_bracket_after_the_emitter_is_still_an_array():
    stmt = parse_one("SELECT RSTREAM [1, 2] AS a, [limit] AS b FROM s [RANGE 1 TUPLES]")
    assert stmt.emitter_options == ()
    assert unparse(stmt) == "SELECT RSTREAM [1, 2] AS a, [limit] AS b FROM s [RANGE 1 TUPLES]"
    assert run_query("SELECT RSTREAM [1, 2] AS a, [limit] AS b FROM s [RANGE 1 TUPLES]",
                     {"s": [{"limit": 7}]}) == [{"a": [1, 2], "b": [7]}]


@pytest.mark.parametrize("text", [
    "SELECT RSTREAM [LIMIT 3 EVERY 2-ND TUPLE] 1 FROM a [RANGE 1 TUPLES]",  # LIMIT comes last
    "SELECT RSTREAM [EVERY 2-ND TUPLE SAMPLE 3%] 1 FROM a [RANGE 1 TUPLES]",  # one sampling only
    "SELECT RSTREAM [LIMIT 2 LIMIT 3] 1 FROM a [RANGE 1 TUPLES]",
    "SELECT RSTREAM [LIMIT 2.5] 1 FROM a [RANGE 1 TUPLES]",  # NumericLiteral
    "SELECT RSTREAM [EVERY 2.5-TH TUPLE] 1 FROM a [RANGE 1 TUPLES]",
    "SELECT RSTREAM [EVERY 2 TUPLES] 1 FROM a [RANGE 1 TUPLES]",
    "SELECT RSTREAM [SAMPLE 5] 1 FROM a [RANGE 1 TUPLES]",
    "SELECT RSTREAM [] 1 FROM a [RANGE 1 TUPLES]",
    "SELECT RSTREAM [LIMIT 99999999999999999999] 1 FROM a [RANGE 1 TUPLES]",  # NewNumericLiteral: int64
])
def test_forms_the_peg_does_not_accept_are_syntax_errors(text):
    with pytest.raises(BQLSyntaxError):
        parse_one(text)


_number = st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
_sampling = st.one_of(
    st.builds(lambda k, s: EmitterOption("every_tuple", k, suffix=s), st.integers(-10**9, 10**9),
              st.sampled_from(["ST", "ND", "RD", "TH"])),
    st.builds(lambda v, u: EmitterOption("every_time", v, unit=u), _number,
              st.sampled_from(["seconds", "milliseconds"])),
    st.builds(lambda v: EmitterOption("sample", v), _number),
)
_limit = st.builds(lambda n: EmitterOption("limit", n), st.integers(-10**9, 10**9))
_options = st.one_of(st.tuples(_limit), st.tuples(_sampling), st.tuples(_sampling, _limit))


@settings(max_examples=150, deadline=None)
@given(_options, st.sampled_from(["rstream", "istream", "dstream"]))
def test_unparse_round_trips(options, emitter):
    stmt = parse_one(f"SELECT {emitter.upper()} x FROM s [RANGE 2 TUPLES]")
    assert isinstance(stmt, Select)
    stmt = dataclasses.replace(stmt, emitter_options=options)
    again = parse_one(unparse(stmt))
    assert again.emitter_options == options
    assert [type(o.value) for o in again.emitter_options] == [type(o.value) for o in options]


# ---------------------------------------------------------------------------- analyzer


@pytest.mark.parametrize("option, message", [
    ("LIMIT -3", "LIMIT parameter must have a positive value, not -3"),
    ("EVERY 0-TH TUPLE", "EVERY parameter must have a positive value, not %!d(float64=0)"),
    ("EVERY -2-ND TUPLE LIMIT 3", "EVERY parameter must have a positive value, not %!d(float64=-2)"),
    ("EVERY 0 SECONDS", "EVERY parameter must have a positive value, not %!d(float64=0)"),
    ("EVERY -200 MILLISECONDS", "EVERY parameter must have a positive value, not %!d(float64=-0.2)"),
    ("SAMPLE 100.5%", "SAMPLE parameter must have a value between 0 and 100, not %!d(float64=100.5)"),
    ("SAMPLE -1%", "SAMPLE parameter must have a value between 0 and 100, not %!d(float64=-1)"),
    ("EVERY 2-ND TUPLE LIMIT -1", "LIMIT parameter must have a positive value, not -1"),
])
def test_analyzer_refuses_with_sensorbee_texts_at_the_option(option, message):
    text = f"SELECT RSTREAM\n  [{option}] x FROM s [RANGE 1 TUPLES]"
    with pytest.raises(BQLAnalysisError) as info:
        parse_select(text)
    assert info.value.message == message
    span = info.value.span
    at = option.index("LIMIT") if message.startswith("LIMIT") else 0  # the offending option
    assert (span.line, span.column) == (2, 4 + at)


@pytest.mark.parametrize("option", ["LIMIT 0", "SAMPLE 0%", "SAMPLE 100%", "EVERY 1-ST TUPLE", "EVERY 0.5 SECONDS"])
def test_analyzer_accepts_the_boundaries(option):
    parse_select(f"SELECT RSTREAM [{option}] x FROM s [RANGE 1 TUPLES]")


# ---------------------------------------------------------------------------- runtime vs the model

BASE_QUERIES = [
    "SELECT RSTREAM x, y FROM s [RANGE 2 TUPLES]",
    "SELECT ISTREAM x FROM s [RANGE 3 TUPLES]",
    "SELECT DSTREAM x FROM s [RANGE 2 TUPLES]",
    "SELECT RSTREAM x, count(*) AS n FROM s [RANGE 4 TUPLES] GROUP BY x",
    "SELECT RSTREAM y FROM s [RANGE 1 TUPLES] WHERE x > 1",
]
_rows = st.lists(st.fixed_dictionaries({"x": st.integers(0, 3), "y": st.integers(-5, 5)}), max_size=25)
_kernels = st.sampled_from(["auto", "reference"])


def _with_options(query: str, options: str) -> str:
    emitter, rest = query.split(" ", 2)[1], query.split(" ", 2)[2]
    return f"SELECT {emitter} [{options}] {rest}"


def _plain(query: str, rows, kernel: str):
    return run_query(query, {"s": rows}, context=ProcessorContext(kernel=kernel))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(BASE_QUERIES), _rows, st.integers(1, 4), st.one_of(st.none(), st.integers(1, 6)), _kernels)
def test_every_kth_tuple_and_limit_follow_the_model(query, rows, k, limit, kernel):
    plain = _plain(query, rows, kernel)
    options = f"EVERY {k}-TH TUPLE" + (f" LIMIT {limit}" if limit is not None else "")
    got = run_query_detailed(_with_options(query, options), {"s": rows}, context=ProcessorContext(kernel=kernel))
    expected = plain[::k] if limit is None else plain[::k][:limit]
    assert got.outputs == expected
    assert got.done == (limit is not None and len(plain[::k]) >= limit)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(BASE_QUERIES), _rows, st.integers(1, 8), _kernels)
def test_limit_follows_the_model(query, rows, limit, kernel):
    plain = _plain(query, rows, kernel)
    got = run_query_detailed(_with_options(query, f"LIMIT {limit}"), {"s": rows},
                             context=ProcessorContext(kernel=kernel))
    assert got.outputs == plain[:limit]
    assert got.done == (len(plain) >= limit)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(BASE_QUERIES), _rows, st.integers(0, 10000).map(lambda n: n / 100),
       st.one_of(st.none(), st.integers(1, 5)), st.integers(0, 2**32))
def test_sample_with_a_seeded_generator_follows_the_model(query, rows, percent, limit, seed):
    plain = _plain(query, rows, "auto")
    model_rng = random.Random(seed)
    expected = []
    for row in plain:
        if limit is not None and len(expected) >= limit:
            break
        if model_rng.random() < percent / 100:
            expected.append(row)
    options = f"SAMPLE {percent!r}%" + (f" LIMIT {limit}" if limit is not None else "")
    stmt = parse_select(_with_options(query, options))
    inner = build_processor(dataclasses.replace(stmt, emitter_options=()))
    proc = EmitterOptionsProcessor(inner, stmt.emitter_options, random.Random(seed))
    assert run_processor(proc, {"s": rows}).outputs == expected


@pytest.mark.parametrize("percent, keep", [(0, False), (100, True)])
def test_sample_0_and_100_percent(percent, keep):
    rows = [{"x": i, "y": i} for i in range(30)]
    plain = run_query(BASE_QUERIES[0], {"s": rows})
    got = run_query(_with_options(BASE_QUERIES[0], f"SAMPLE {percent}%"), {"s": rows})
    assert got == (plain if keep else [])


def test_sample_keeps_a_loose_share():
    rows = [{"x": i, "y": i} for i in range(400)]
    got = run_query("SELECT RSTREAM [SAMPLE 50%] x FROM s [RANGE 1 TUPLES]", {"s": rows})
    assert 100 < len(got) < 300
    assert got == sorted(got, key=lambda r: r["x"])  # a subset, in order


def test_limit_zero_emits_nothing_and_never_ends():
    rows = [{"x": i, "y": 0} for i in range(5)]
    got = run_query_detailed(_with_options(BASE_QUERIES[0], "LIMIT 0"), {"s": rows})
    assert got.outputs == [] and not got.done and not got.dropped


def test_after_the_limit_tuples_are_not_processed():
    rows = [{"x": 1}, {"x": 2}, {"x": 0}, {"x": 0}]
    query = "SELECT RSTREAM {opts} 10 / x AS q FROM s [RANGE 1 TUPLES]"
    plain = run_query_detailed(query.format(opts=""), {"s": rows})
    assert len(plain.dropped) == 2  # division by zero
    got = run_query_detailed(query.format(opts="[LIMIT 2]"), {"s": rows})
    assert got.outputs == plain.outputs and got.done and not got.dropped


def test_dropped_tuples_before_the_limit_pass_through():
    rows = [{"x": 0}, {"x": 2}, {"x": 5}]
    query = "SELECT RSTREAM {opts} 10 / x AS q FROM s [RANGE 1 TUPLES]"
    plain = run_query_detailed(query.format(opts=""), {"s": rows})
    got = run_query_detailed(query.format(opts="[EVERY 2-ND TUPLE]"), {"s": rows})
    assert got.outputs == plain.outputs[::2]
    assert [d.error for d in got.dropped] == [d.error for d in plain.dropped]


def test_union_branches_apply_their_own_options():
    rows = [{"x": i, "y": i} for i in range(9)]
    left, right = "SELECT RSTREAM x FROM s [RANGE 1 TUPLES]", "SELECT RSTREAM y FROM s [RANGE 1 TUPLES]"
    plain_left, plain_right = run_query(left, {"s": rows}), run_query(right, {"s": rows})
    got = run_query(f"{_with_options(left, 'EVERY 3-RD TUPLE')} UNION ALL {_with_options(right, 'LIMIT 2')}",
                    {"s": rows})
    assert sorted(map(str, got)) == sorted(map(str, plain_left[::3] + plain_right[:2]))


@settings(max_examples=30, deadline=None)
@given(_rows, st.integers(1, 3), st.integers(1, 6), st.integers(0, 25))
def test_snapshot_and_restore_resume_exactly(rows, k, limit, cut):
    stmt = parse_select(f"SELECT ISTREAM [EVERY {k}-TH TUPLE LIMIT {limit}] x FROM s [RANGE 3 TUPLES]")
    whole = run_processor(build_processor(stmt), {"s": rows}).outputs
    first = build_processor(stmt)
    head = run_processor(first, {"s": rows[:cut]}) if cut else None
    second = build_processor(stmt)
    second.restore(first.snapshot())
    outputs = (head.outputs if head else [])
    if not (head and head.done):
        outputs = outputs + run_processor(second, {"s": rows[cut:]}).outputs
    assert outputs == whole


# ---------------------------------------------------------------------------- EVERY x SECONDS (wall clock)

START = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)


def _feed(proc, rows):
    from sbpy.bql.runtime.processor import Tuple

    out = []
    for i, data in enumerate(rows):
        step = proc.process(Tuple(dict(data), START, i + 1, "s"))
        out.extend(t.data for t in step.outputs)
    return out


def _tick(proc, seconds):
    return [t.data for t in proc.tick(START + _dt.timedelta(seconds=seconds)).outputs]


def test_time_sampling_emits_the_latest_tuple_once_per_tick():
    proc = build_processor(parse_select("SELECT RSTREAM [EVERY 2 SECONDS] x FROM s [RANGE 1 TUPLES]"))
    assert proc.tick_period() == _dt.timedelta(seconds=2)
    assert proc.next_tick() is not None and proc.next_tick() <= START  # the ticker starts at once
    assert _tick(proc, 0) == []  # start
    assert _feed(proc, [{"x": 1}, {"x": 2}, {"x": 3}]) == []  # nothing while processing
    assert _tick(proc, 2) == [{"x": 3}]
    assert _tick(proc, 4) == []  # nothing new since the last tick
    assert _feed(proc, [{"x": 4}]) == []
    assert _tick(proc, 11) == [{"x": 4}]  # a late tick emits once
    assert _feed(proc, [{"x": 5}]) == []
    assert _tick(proc, 13) == [{"x": 5}]


def test_time_sampling_counts_against_limit():
    proc = build_processor(parse_select("SELECT RSTREAM [EVERY 500 MILLISECONDS LIMIT 2] x FROM s [RANGE 1 TUPLES]"))
    assert proc.tick_period() == _dt.timedelta(milliseconds=500)
    _tick(proc, 0)
    got = []
    for i in range(4):
        got += _feed(proc, [{"x": i}])
        step = proc.tick(START + _dt.timedelta(seconds=0.5 * (i + 1)))
        got += [t.data for t in step.outputs]
    assert got == [{"x": 0}, {"x": 1}]
    assert step.done and proc.next_tick() is None


def test_time_sampling_follows_the_model_over_random_schedules():
    """Model: the ticker (period 1 s, started at 0) fires at the first tick at or after its due time,
    emits the latest tuple not yet emitted, and is next due at the following whole second."""
    rng = random.Random(7)
    for _ in range(40):
        proc = build_processor(parse_select("SELECT RSTREAM [EVERY 1 SECONDS] x FROM s [RANGE 1 TUPLES]"))
        _tick(proc, 0)
        now, due, got, expected, pending = 0.0, 1.0, [], [], None
        for i in range(rng.randint(0, 15)):
            got += _feed(proc, [{"x": i}])
            pending = {"x": i}
            if rng.random() < 0.5:
                now += rng.choice([0.25, 1.0, 2.5])
                got += _tick(proc, now)
                if now >= due:
                    if pending is not None:
                        expected.append(pending)
                        pending = None
                    due = float(int(now) + 1)
        assert got == expected


# ---------------------------------------------------------------------------- planning


def test_a_stage_with_emitter_options_is_not_memoryless():
    plain = describe_stage("n", "SELECT RSTREAM x FROM s [RANGE 1 TUPLES]", ["s"])
    assert plain.stateless
    for option in ["LIMIT 3", "EVERY 2-ND TUPLE", "SAMPLE 50%", "EVERY 1 SECONDS"]:
        stage = describe_stage("n", f"SELECT RSTREAM [{option}] x FROM s [RANGE 1 TUPLES]", ["s"])
        assert not stage.stateless and "emitter options" in stage.why
        assert stage.kernel == "emitter_options"
        assert stage.implementation.startswith("SensorBee's emitter options over the query's output; the query: ")
        assert stage.implementation.endswith(plain.implementation)


def test_the_native_tier_does_not_compile_a_stage_with_emitter_options():
    from sbpy.bql.spark.native_stage import Unsupported, stage_parts

    assert stage_parts(build_processor(parse_select("SELECT RSTREAM x FROM s [RANGE 1 TUPLES]")))
    for option in ["LIMIT 3", "EVERY 2-ND TUPLE", "SAMPLE 50%", "EVERY 1 SECONDS"]:
        with pytest.raises(Unsupported):
            stage_parts(build_processor(parse_select(f"SELECT RSTREAM [{option}] x FROM s [RANGE 1 TUPLES]")))
