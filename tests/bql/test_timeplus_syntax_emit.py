"""``EMIT [STREAM] ... AND TIMEOUT t`` and ``EMIT ... AND LAST x [ON PROCTIME]`` (docs/timeplus.md).

References: a timeout emits what the end-of-input flush of the same query without TIMEOUT emits; LAST on
a global aggregation is checked against a model of the range ``(M - x, M]``; LAST on windows and tails
gives the rows of the query without it. Wall-clock ticks are driven by hand (``tick(now)``), using the
processor's own ``next_tick()``, so no test depends on how fast it runs.
"""
import datetime as dt
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError, BQLSyntaxError
from sbpy.bql.parser import parse_one
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select, run_query

T0 = 1580673600
UTC = dt.timezone.utc
US = dt.timedelta(microseconds=1)
events = st.lists(st.tuples(st.integers(0, 40), st.sampled_from("ab"), st.integers(-3, 9)), max_size=25)


def _rows(evs):
    return [{"ts": T0 + t, "k": k, "v": v} for t, k, v in evs]


class Run:
    def __init__(self, query):
        self.proc = build_processor(parse_select(query))
        self.seq = 0
        self.dropped = []

    def push(self, row):
        self.seq += 1
        step = self.proc.process(Tuple(row, dt.datetime.fromtimestamp(row["ts"], UTC), self.seq, "src"))
        self.dropped += step.dropped
        return [json_ready(t.data) for t in step.outputs]

    def tick(self, now):
        return [json_ready(t.data) for t in self.proc.tick(now).outputs]

    def finish(self):
        return [json_ready(t.data) for t in self.proc.finish("src").outputs]


@pytest.mark.parametrize("text", [
    "SELECT RSTREAM count(*) AS c FROM src EMIT STREAM PERIODIC 3s REPEAT",
    "SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 5s AND LAST 1h",
    "SELECT RSTREAM count(*) AS c FROM src EMIT LAST 1h ON PROCTIME",
    "SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, 5s) GROUP BY window_start "
    "EMIT AFTER WATERMARK WITH DELAY 1s AND TIMEOUT 3s",
    "SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, 5s) GROUP BY window_start EMIT TIMEOUT 3s AND LAST 1m",
])
def test_forms_parse_and_unparse(text):
    stmt = parse_one(text)
    assert parse_one(unparse(stmt)) == stmt
    assert "STREAM" not in unparse(stmt).split("EMIT")[1]


def test_policy_less_emit_resolves_by_from_item():
    assert parse_select("SELECT RSTREAM count(*) AS c FROM src EMIT LAST 1h").emit.period.seconds() == 2.0
    windowed = parse_select("SELECT RSTREAM count(*) AS c FROM tumble(src, 5s) GROUP BY window_start EMIT TIMEOUT 3s")
    assert windowed.emit.kind == "after_watermark" and windowed.emit.timeout.seconds() == 3.0


@pytest.mark.parametrize("query,message,col", [
    ("SELECT RSTREAM count(*) AS c FROM src EMIT ON UPDATE AND TIMEOUT 5s", "EMIT ... TIMEOUT needs", 66),
    ("SELECT RSTREAM v FROM tumble(src, 5s) EMIT TIMEOUT 5s", "EMIT ... TIMEOUT needs", 52),
    ("SELECT RSTREAM count(*) AS c FROM src EMIT ON UPDATE AND LAST 5s", "EMIT LAST on a global aggregation", 63),
])
def test_misplaced_extras_are_analyzer_errors(query, message, col):
    with pytest.raises(BQLAnalysisError, match=message.replace(".", r"\.")) as info:
        parse_select(query)
    assert (info.value.span.line, info.value.span.column) == (1, col)


def test_an_extra_given_twice_is_a_syntax_error():
    with pytest.raises(BQLSyntaxError, match="EMIT has TIMEOUT twice"):
        parse_one("SELECT RSTREAM count(*) AS c FROM tumble(src, 5s) GROUP BY window_start EMIT TIMEOUT 3s AND TIMEOUT 1m")


# ---------------------------------------------------------------- TIMEOUT

TIMED = [
    "SELECT RSTREAM window_start, k, count(*) AS c, sum(v) AS s FROM tumble(src, ts, 10s) GROUP BY window_start, k{e}",
    "SELECT RSTREAM window_start, count(*) AS c FROM hop(src, ts, 5s, 15s) GROUP BY window_start{e}",
    "SELECT RSTREAM window_start, window_end, k, count(*) AS c FROM session(src, ts, 4s) "
    "GROUP BY window_start, window_end, k{e}",
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TIMED), events, events)
def test_a_timeout_flushes_like_the_end_of_input_then_later_tuples_of_closed_windows_are_late(template, evs, more):
    rows, later = _rows(evs), _rows(more)
    timed = Run(template.format(e=" EMIT AFTER WATERMARK AND TIMEOUT 1h"))
    plain = Run(template.format(e=""))
    for r in rows:
        assert timed.push(r) == plain.push(r)
    due = timed.proc.next_tick()
    if not rows or plain.proc.panes == {}:
        assert due is None or timed.tick(due) == []
        return
    assert timed.proc.tick_period() == dt.timedelta(hours=1)
    assert timed.tick(due - US) == []  # not yet
    ends = max(p.end for p in timed.proc.panes.values()) / 1_000_000
    flushed = timed.tick(due)
    assert flushed == plain.finish() and flushed
    assert timed.proc.next_tick() is None  # nothing open, no tuple since
    for r in later:
        out = timed.push(r)
        if r["ts"] < ends and "session" not in template:
            assert out == [] and timed.dropped and "late tuple" in timed.dropped[-1].error


def test_timeout_state_survives_a_snapshot():
    q = "SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, ts, 10s) GROUP BY window_start EMIT TIMEOUT 1h"
    first = Run(q)
    first.push({"ts": T0 + 1})
    second = Run(q)
    second.proc.restore(first.proc.snapshot())
    due = second.proc.next_tick()
    assert due == first.proc.next_tick() and second.tick(due) == [{"window_start": T0, "c": 1}]


# ---------------------------------------------------------------- LAST

last_events = st.lists(st.tuples(st.integers(0, 60), st.sampled_from("abc"), st.integers(-3, 9)), max_size=30)


@settings(max_examples=80, deadline=None)
@given(last_events, st.integers(1, 20))
def test_last_range_of_a_global_aggregation_matches_the_model(evs, span):
    run = Run(f"SELECT RSTREAM k, count(*) AS c, sum(v) AS s FROM src GROUP BY k "
              f"EMIT PERIODIC 1s REPEAT AND LAST {span}s")
    kept, late, newest, now = [], 0, None, dt.datetime(2030, 1, 1, tzinfo=UTC)
    for r in _rows(evs):
        run.push(r)
        newest = r["ts"] if newest is None else max(newest, r["ts"])
        if r["ts"] <= newest - span:
            late += 1
        else:
            kept.append(r)
        assert len(run.dropped) == late and all("EMIT LAST range" in d.error for d in run.dropped)
        now += dt.timedelta(seconds=1)
        got = run.tick(now)
        groups = defaultdict(list)
        for x in kept:
            if x["ts"] > newest - span:
                groups[x["k"]].append(x["v"])
        assert sorted((g["k"], g["c"], g["s"]) for g in got) == sorted(
            (k, len(vs), sum(vs)) for k, vs in groups.items())


def test_last_without_repeat_emits_the_groups_rows_left():
    run = Run("SELECT RSTREAM k, count(*) AS c FROM src GROUP BY k EMIT PERIODIC 1s AND LAST 10s")
    now = dt.datetime(2030, 1, 1, tzinfo=UTC)
    run.push({"ts": T0, "k": "a"})
    run.push({"ts": T0 + 1, "k": "b"})
    assert sorted(r["k"] for r in run.tick(now)) == ["a", "b"]
    run.push({"ts": T0 + 10, "k": "b"})  # a's row leaves the range (T0 <= T0 + 10 - 10): a has no rows
    assert run.tick(now + dt.timedelta(seconds=1)) == [{"k": "b", "c": 2}]
    run.push({"ts": T0 + 11, "k": "c"})  # b's first row leaves: b changed too
    assert sorted((r["k"], r["c"]) for r in run.tick(now + dt.timedelta(seconds=2))) == [("b", 1), ("c", 1)]


def test_last_on_proctime_uses_the_wall_clock_of_the_emission():
    run = Run("SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 1s REPEAT AND LAST 1h ON PROCTIME")
    for i in range(3):
        run.push({"ts": T0 - 86400 * 365 + i})  # old event times do not matter
    assert run.dropped == []
    now = dt.datetime.now(UTC)
    assert run.tick(now) == [{"c": 3}]
    assert run.proc.next_tick() is not None  # rows may still slide out: the query keeps ticking
    assert run.tick(now + dt.timedelta(hours=2)) == []  # every row left the range; no group is left


@settings(max_examples=40, deadline=None)
@given(events)
def test_last_on_windows_and_tails_changes_nothing(evs):
    rows = _rows(evs)
    for q, extra in [
        ("SELECT RSTREAM window_start, k, count(*) AS c FROM tumble(src, ts, 10s) GROUP BY window_start, k", " EMIT LAST 1h"),
        ("SELECT RSTREAM k, v FROM src WHERE v > 2 EMIT ON UPDATE", " AND LAST 5m"),
    ]:
        assert run_query(q + extra, {"src": rows}) == run_query(q, {"src": rows})


# ---------------------------------------------------------------- the fused operator drives the timeout


def test_the_operator_ticks_a_timeout_query_at_its_deadline():
    from sbpy.bql.spark import journal_format as jf
    from sbpy.bql.spark.operator import Pipeline, StageSpec
    from sbpy.bql.spark.tick_interval import tick_interval_ms

    q = "SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, ts, 10s) GROUP BY window_start EMIT TIMEOUT 300ms"
    assert tick_interval_ms([StageSpec("s", q, ("src",))]) == 300
    assert tick_interval_ms([StageSpec("s", q.replace("300ms", "1h"), ("src",))]) == 1000
    p = Pipeline([StageSpec("s", q, ("src",))])
    assert p.next_tick() is None
    p.run([(1, "src", 1000, jf.encode_data({"ts": T0 + 1}), False)])
    due = p.next_tick()
    assert due is not None and p.tick(due - US) == []
    out = [jf.decode_data(r[5]) for r in p.tick(due) if r[0] == "out"]
    assert out == [{"window_start": T0, "c": 1}] and p.next_tick() is None
