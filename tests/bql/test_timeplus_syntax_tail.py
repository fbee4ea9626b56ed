"""The Timeplus streaming tail, ``EMIT PERIODIC p ON UPDATE`` and ``SETTINGS`` (docs/timeplus.md).

References: a tail (``SELECT ... FROM s WHERE ...``: no emitter, no EMIT, no RANGE) gives the rows and
dropped tuples of SensorBee's ``SELECT RSTREAM ... FROM s [RANGE 1 TUPLES] WHERE ...`` — the BQL
kernel, the long form — over random inputs; an aggregating tail gives what ``EMIT PERIODIC 2s`` gives.
``PERIODIC p ON UPDATE`` is checked against an independent model of Proton's PeriodicOnUpdate (each due
tick: the current rows of the groups that received a tuple since the last emission). ``SETTINGS
max_keep_windows`` changes no row. Ticks are driven by hand (``tick(now)``).
"""
import datetime as dt
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.parser import parse_one
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select, run_query, run_query_detailed

T0 = 1580673600
UTC = dt.timezone.utc
# v is sometimes a string: comparing it with a number fails, so the row is dropped with an error
values = st.one_of(st.integers(-3, 9), st.sampled_from(["x", None, 2.5]))
events = st.lists(st.tuples(st.integers(0, 40), st.sampled_from("ab"), values), max_size=25)


def _rows(evs):
    return [{"ts": T0 + t, "k": k, "v": v} for t, k, v in evs]


def _dropped(result):
    return [(d.tuple.seq, d.error, d.event_type) for d in result.dropped]


# ---------------------------------------------------------------- streaming tail

TAILS = [
    ("SELECT k, v FROM src WHERE v > 2", "SELECT RSTREAM k, v FROM src [RANGE 1 TUPLES] WHERE v > 2"),
    ("SELECT *, v * 2 AS w FROM src", "SELECT RSTREAM *, v * 2 AS w FROM src [RANGE 1 TUPLES]"),
    ("SELECT t:v + 1 AS w FROM src AS t WHERE t:k = \"a\"",
     "SELECT RSTREAM t:v + 1 AS w FROM src [RANGE 1 TUPLES] AS t WHERE t:k = \"a\""),
]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(TAILS), events)
def test_tail_equals_rstream_over_one_tuple(pair, evs):
    tail, long_form = pair
    rows = _rows(evs)
    got, want = run_query_detailed(tail, {"src": rows}), run_query_detailed(long_form, {"src": rows})
    assert got.outputs == want.outputs
    assert _dropped(got) == _dropped(want)


def test_seed_tail_examples_run():
    rows = [{"device": "d1", "cpu_usage": 99}, {"device": "d2", "cpu_usage": 100}, {"device": "d3", "cpu_usage": 12}]
    strict = "SELECT device, cpu_usage FROM devices_utils WHERE cpu_usage > 99"
    assert run_query(strict, {"devices_utils": rows}) == [{"device": "d2", "cpu_usage": 100}]
    loose = "SELECT device, cpu_usage FROM devices_utils WHERE cpu_usage >= 99"
    assert [r["device"] for r in run_query(loose, {"devices_utils": rows})] == ["d1", "d2"]


@pytest.mark.parametrize("query,message", [
    # SensorBee's errors stay wherever the query is not a tail
    ("SELECT a FROM src [RANGE 1 TUPLES]", "an emitter (RSTREAM, ISTREAM or DSTREAM) is required"),
    ("SELECT RSTREAM a FROM src", "stream 'src' needs a window such as [RANGE 1 TUPLES]"),
    ("SELECT a FROM src, other", "an emitter (RSTREAM, ISTREAM or DSTREAM) is required"),
    ("SELECT ISTREAM a FROM src EMIT ON UPDATE", "ISTREAM cannot be used with a window function or EMIT"),
])
def test_non_tails_keep_sensorbee_errors(query, message):
    with pytest.raises(BQLAnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        parse_select(query)


def _ticked(query, rows, ticks):
    """Outputs of ``query`` per step: after each row, then at each tick (epoch seconds) in order."""
    proc = build_processor(parse_select(query))
    out = []
    for i, row in enumerate(rows):
        step = proc.process(Tuple(row, dt.datetime.fromtimestamp(row["ts"], UTC), i + 1, "src"))
        out.append([json_ready(t.data) for t in step.outputs])
        if i in ticks:
            out.append([json_ready(t.data) for t in proc.tick(dt.datetime.fromtimestamp(ticks[i], UTC)).outputs])
    out.append([json_ready(t.data) for t in proc.finish("src").outputs])
    return out


@settings(max_examples=40, deadline=None)
@given(events, st.lists(st.integers(0, 24), max_size=6))
def test_aggregating_tail_emits_like_periodic_2s(evs, tick_after):
    rows = [r for r in _rows(evs) if isinstance(r["v"], int)]
    ticks = {i: 1000 + 2 * n for n, i in enumerate(sorted(set(tick_after)))}
    tail = "SELECT k, count(*) AS c, sum(v) AS s FROM src GROUP BY k"
    explicit = "SELECT RSTREAM k, count(*) AS c, sum(v) AS s FROM src GROUP BY k EMIT PERIODIC 2s"
    assert _ticked(tail, rows, ticks) == _ticked(explicit, rows, ticks)
    assert build_processor(parse_select(tail)).tick_period() == dt.timedelta(seconds=2)


# ---------------------------------------------------------------- EMIT PERIODIC ... ON UPDATE


def _periodic_on_update_model(rows, ticks):
    """Proton's PeriodicOnUpdate over a global GROUP BY k with count and sum, as a plain model."""
    count, total, touched = defaultdict(int), defaultdict(int), []
    out = []
    for i, row in enumerate(rows):
        count[row["k"]] += 1
        total[row["k"]] += row["v"]
        if row["k"] not in touched:
            touched.append(row["k"])
        out.append([])
        if i in ticks:
            out.append([{"k": k, "c": count[k], "s": total[k]} for k in touched])
            touched = []
    out.append([{"k": k, "c": count[k], "s": total[k]} for k in touched])  # end of input: the last changes
    return out


@settings(max_examples=60, deadline=None)
@given(events, st.lists(st.integers(0, 24), max_size=8))
def test_periodic_on_update_emits_the_groups_changed_since_the_last_emission(evs, tick_after):
    rows = [r for r in _rows(evs) if isinstance(r["v"], int)]
    ticks = {i: 1000 + 5 * n for n, i in enumerate(sorted(set(tick_after)))}
    query = "SELECT k, count(*) AS c, sum(v) AS s FROM src GROUP BY k EMIT PERIODIC 5s ON UPDATE"
    got = _ticked(query, rows, ticks)
    want = _periodic_on_update_model(rows, ticks)
    # group order within one emission is the order of the groups' first rows, as in the model's list
    assert [sorted(map(str, step)) for step in got] == [sorted(map(str, step)) for step in want]


def test_periodic_on_update_over_windows_and_its_errors():
    text = ("SELECT RSTREAM window_start, cid, count() AS cnt FROM tumble(car_live_data, 5s) "
            "GROUP BY window_start, cid EMIT PERIODIC 1s ON UPDATE")
    stmt = parse_one(text)
    assert stmt.emit.on_update and parse_one(unparse(stmt)) == stmt and "ON UPDATE" in unparse(stmt)
    with pytest.raises(BQLAnalysisError, match="cannot be combined with ON UPDATE"):
        parse_select("SELECT count(*) AS c FROM src EMIT PERIODIC 1s REPEAT ON UPDATE")


# ---------------------------------------------------------------- SETTINGS

SEED_SETTINGS = [
    "SELECT device, count(*) FROM device_utils WHERE cpu_usage > 80 GROUP BY device "
    "EMIT PERIODIC 5s AND LAST 1h SETTINGS max_keep_windows=720",
    "SELECT device, window_end, count(*) FROM tumble(device_utils, 5s) WHERE cpu_usage > 80 "
    "GROUP BY device, window_end EMIT LAST 1h SETTINGS max_keep_windows=720",
]


@pytest.mark.parametrize("text", SEED_SETTINGS)
def test_seed_settings_examples_parse_analyse_and_unparse(text):
    stmt = parse_one(text)
    assert [(s.name, s.value) for s in stmt.settings] == [("max_keep_windows", 720)]
    assert parse_one(unparse(stmt)) == stmt
    parse_select(text)


@settings(max_examples=40, deadline=None)
@given(events, st.integers(1, 1000))
def test_max_keep_windows_changes_no_row(evs, n):
    rows = [r for r in _rows(evs) if isinstance(r["v"], int)]
    base = "SELECT RSTREAM window_start, k, count(*) AS c FROM tumble(src, ts, 5s) GROUP BY window_start, k EMIT LAST 1h"
    assert run_query(f"{base} SETTINGS max_keep_windows = {n}", {"src": rows}) == run_query(base, {"src": rows})


@pytest.mark.parametrize("query,message", [
    ("SELECT count(*) AS c FROM src EMIT PERIODIC 1s SETTINGS max_keep = 3",
     "unknown setting 'max_keep' (a Timeplus query accepts: max_keep_windows)"),
    ("SELECT count(*) AS c FROM src EMIT PERIODIC 1s SETTINGS max_keep_windows = 0",
     "setting 'max_keep_windows' must be a positive integer, got 0"),
    ("SELECT count(*) AS c FROM src EMIT PERIODIC 1s SETTINGS max_keep_windows = \"x\"",
     "setting 'max_keep_windows' must be a positive integer, got 'x'"),
    ("SELECT RSTREAM a FROM src [RANGE 1 TUPLES] SETTINGS max_keep_windows = 3",
     "SETTINGS can only be used in a Timeplus query"),
])
def test_bad_settings_are_analyzer_errors_at_the_setting(query, message):
    with pytest.raises(BQLAnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        parse_select(query)
    assert (info.value.span.line, info.value.span.column) == (1, query.index("max_keep") + 1)


def test_match_recognize_settings_are_unaffected():
    text = ("SELECT RSTREAM m FROM src [RANGE 1 TUPLES] MATCH_RECOGNIZE (ORDER BY ts MEASURES A.v AS m "
            "PATTERN (A) DEFINE A AS A.v > 0 SETTINGS time_order_recover_delay = 5)")
    stmt = parse_one(text)
    assert stmt.settings == () and stmt.from_items[0].settings[0].name == "time_order_recover_delay"
