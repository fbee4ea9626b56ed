"""Proton's functions: the aggregates latest / earliest / any / max_k / min_k, and lag / emit_version.

Each is checked against an independent model in this file (plain Python over the same rows: the window
of each event, the rows a streaming tail emits) on random inputs, plus the analyzer's placement rules.
"""
import datetime as dt
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select, run_query, run_query_detailed

T0 = 1580673600
value = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([1.5, 2.0, -0.5]))
events = st.lists(st.tuples(st.integers(0, 40), st.sampled_from("ab"), value), max_size=30)


def _rows(evs):
    return [{"ts": T0 + t, "k": k, "v": v} for t, k, v in evs]


def _windows(rows, size):
    """Model: rows of each (window_start, k) in arrival order, for tumble windows of ``size`` s; a row
    older than the aligned watermark (the end of the last closed window) is late and dropped."""
    groups, closed_end, top = defaultdict(list), None, None
    for r in rows:
        t = r["ts"]
        if closed_end is not None and t < closed_end:
            continue
        top = t if top is None else max(top, t)
        closed_end = (top // size) * size
        groups[((t // size) * size, r["k"])].append(r["v"])
    return groups


def _top(vals, k, largest):
    present = [v for v in vals if v is not None]
    if not present:
        return None
    order = sorted(range(len(present)), key=lambda i: (-present[i] if largest else present[i], i))
    return [present[i] for i in order[:k]]


@settings(max_examples=80, deadline=None)
@given(events, st.integers(0, 4))
def test_aggregates_match_the_model(evs, k):
    rows = _rows(evs)
    out = run_query(
        f"SELECT RSTREAM window_start, k, latest(v) AS l, earliest(v) AS e, any(v) AS a, max_k(v, {k}) AS mx, "
        f"min_k(v, {k}) AS mn FROM tumble(src, ts, 10s) GROUP BY window_start, k", {"src": rows})
    got = {(r["window_start"], r["k"]): r for r in out}
    model = _windows(rows, 10)
    assert set(got) == set(model)
    for key, vals in model.items():
        present = [v for v in vals if v is not None]
        r = got[key]
        assert r["l"] == (present[-1] if present else None) and type(r["l"]) is type(present[-1] if present else None)
        assert r["e"] == r["a"] == (present[0] if present else None)
        assert r["mx"] == _top(vals, k, True) and r["mn"] == _top(vals, k, False)
        if r["mx"]:
            assert [type(x) for x in r["mx"]] == [type(x) for x in _top(vals, k, True)]


def test_max_k_errors_drop_the_group_with_the_function_text():
    rows = [{"ts": T0, "v": "x"}, {"ts": T0 + 1, "v": 2}]
    bad_type = run_query_detailed("SELECT RSTREAM max_k(v, 2) AS m FROM tumble(src, ts, 10s) GROUP BY window_start",
                                  {"src": rows})
    assert bad_type.outputs == [] and [d.error for d in bad_type.dropped] == [
        "function 'max_k': 'x' must be 'int' or 'float', got 'string'"]
    negative = run_query_detailed("SELECT RSTREAM max_k(v, -1) AS m FROM tumble(src, ts, 10s) GROUP BY window_start",
                                  {"src": rows[1:]})
    assert [d.error for d in negative.dropped] == ["function 'max_k': 'k' must not be negative, got -1"]


# ---------------------------------------------------------------- lag


def _type_default(v):
    return {bool: False, int: 0, float: 0.0, str: ""}.get(type(v))


@settings(max_examples=80, deadline=None)
@given(events, st.integers(1, 4), st.booleans())
def test_lag_is_the_value_n_rows_back_of_the_emitted_rows(evs, n, with_default):
    rows = _rows(evs)
    default = ", -100" if with_default else ""
    out = run_query(f"SELECT RSTREAM v, lag(v, {n}{default}) AS p, lag(k) AS pk FROM src WHERE k = \"a\" "
                    "EMIT ON UPDATE", {"src": rows})
    emitted = [r for r in rows if r["k"] == "a"]
    assert [r["v"] for r in out] == [r["v"] for r in emitted]
    for i, r in enumerate(out):
        if i >= n:
            assert r["p"] == emitted[i - n]["v"] and type(r["p"]) is type(emitted[i - n]["v"])
        else:
            assert r["p"] == (-100 if with_default else _type_default(r["v"]))
        assert r["pk"] == ("a" if i else "")


def test_lag_over_hop_counts_each_window_row():
    rows = [{"ts": T0 + t, "v": t} for t in (0, 3)]
    out = run_query("SELECT RSTREAM window_start, v, lag(window_start) AS prev FROM hop(src, ts, 2s, 4s)",
                    {"src": rows})
    starts = [r["window_start"] for r in out]
    assert starts == [T0 - 2, T0, T0, T0 + 2]
    assert [r["prev"] for r in out] == [0] + starts[:-1]


def test_lag_default_is_evaluated_on_the_current_row_and_failures_leave_no_trace():
    rows = [{"ts": T0, "v": 1}, {"ts": T0 + 1, "v": "x"}, {"ts": T0 + 2, "v": 3}]
    res = run_query_detailed("SELECT RSTREAM v, lag(v, 1, v * 10) AS p, v + 1 AS w FROM src EMIT ON UPDATE",
                             {"src": rows})
    assert res.outputs == [{"v": 1, "p": 10, "w": 2}, {"v": 3, "p": 1, "w": 4}]  # the failed row is not a row
    assert len(res.dropped) == 1


def _feed(proc, rows, start):
    out = []
    for seq, row in enumerate(rows, start=start):
        when = dt.datetime.fromtimestamp(row["ts"], dt.timezone.utc)
        out += [t.data for t in proc.process(Tuple(row, when, seq, "src")).outputs]
    return out


@settings(max_examples=40, deadline=None)
@given(events, st.integers(0, 30))
def test_lag_and_emit_version_survive_a_snapshot(evs, cut):
    rows = _rows(evs)
    for q in ("SELECT RSTREAM v, lag(v, 2) AS p FROM src EMIT ON UPDATE",
              "SELECT RSTREAM k, count(*) AS c, emit_version() AS ev FROM src GROUP BY k EMIT ON UPDATE"):
        whole = build_processor(parse_select(q))
        expected = _feed(whole, rows, 1)
        first = build_processor(parse_select(q))
        head = _feed(first, rows[:cut], 1)
        second = build_processor(parse_select(q))
        second.restore(first.snapshot())
        assert head + _feed(second, rows[cut:], cut + 1) == expected


# ---------------------------------------------------------------- emit_version


@settings(max_examples=60, deadline=None)
@given(events)
def test_emit_version_numbers_emissions_and_rows_of_one_emission_share_it(evs):
    rows = _rows(evs)
    proc = build_processor(parse_select(
        "SELECT RSTREAM window_start, k, count(*) AS c, emit_version() AS ev FROM hop(src, ts, 5s, 10s) "
        "GROUP BY window_start, k EMIT ON UPDATE"))
    emissions = []
    for seq, row in enumerate(rows, start=1):
        step = proc.process(Tuple(row, dt.datetime.fromtimestamp(row["ts"], dt.timezone.utc), seq, "src"))
        if step.outputs:
            emissions.append([t.data["ev"] for t in step.outputs])
    assert [set(e) for e in emissions] == [{i} for i in range(len(emissions))]


def test_emit_version_after_watermark_one_version_per_closing():
    rows = [{"ts": T0 + t, "k": k} for t, k in [(0, "a"), (1, "b"), (12, "a"), (25, "b")]]
    out = run_query("SELECT RSTREAM window_start, k, count(*) AS c, emit_version() AS ev FROM tumble(src, ts, 10s) "
                    "GROUP BY window_start, k", {"src": rows})
    by_window = defaultdict(set)
    for r in out:
        by_window[r["window_start"]].add(r["ev"])
    assert sorted((w, tuple(v)) for w, v in by_window.items()) == [(T0, (0,)), (T0 + 10, (1,)), (T0 + 20, (2,))]


# ---------------------------------------------------------------- where they may stand


@pytest.mark.parametrize("query,message,col", [
    ("SELECT RSTREAM v FROM src WHERE lag(v) > 1 EMIT ON UPDATE", "lag() can only be used in the select list", 33),
    ("SELECT ISTREAM lag(v) AS p FROM src [RANGE 1 TUPLES]", "lag() can only be used in the select list", 16),
    ("SELECT RSTREAM count(*) AS c, lag(1) AS p FROM src EMIT ON UPDATE", "lag() cannot be used in an aggregating", 31),
    ("SELECT RSTREAM lag(v, 0) AS p FROM src EMIT ON UPDATE", "the offset of lag() must be an integer literal", 23),
    ("SELECT RSTREAM lag(v, n) AS p FROM src EMIT ON UPDATE", "the offset of lag() must be an integer literal", 23),
    ("SELECT RSTREAM lag(lag(v)) AS p FROM src EMIT ON UPDATE", "lag() cannot be nested", 20),
    ("SELECT RSTREAM v, emit_version() AS e FROM src EMIT ON UPDATE", "emit_version() can only be used", 19),
    ("SELECT ISTREAM count(*) AS c, emit_version() AS e FROM src [RANGE 2 TUPLES]",
     "emit_version() can only be used", 31),
    ("SELECT RSTREAM sum(emit_version()) AS e FROM src EMIT ON UPDATE", "emit_version() cannot be an aggregate", 20),
])
def test_misplaced_calls_are_analyzer_errors_with_a_caret(query, message, col):
    with pytest.raises(BQLAnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_select(query)
    assert (info.value.span.line, info.value.span.column) == (1, col)


def test_streaming_functions_are_refused_by_eval():
    from sbpy.bql.errors import BQLError
    from sbpy.bql.eval.constant import evaluate_constant
    from sbpy.bql.parser import parse_one

    for text in ("EVAL lag(1)", "EVAL emit_version()"):
        with pytest.raises(BQLError, match="outside of a stream processing context"):
            evaluate_constant(parse_one(text).expr)
