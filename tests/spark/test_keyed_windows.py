"""The keyed Timeplus window split (ordered router → buckets of windows → tail), run in-process without
Spark (``keyed_model.run_segments``): for every tumble/hop GROUP BY conformance case and for random streams
(several keys, int/float-equal keys, NULL/missing keys, NaN, equal timestamps, late rows, bursts, bad times,
a WHERE that fails on some rows), random micro-batch splits, bucket counts, bucket orders, dropped worker
caches and failed attempts give exactly the sequential operator's rows: the same ``out`` and ``dropped``
rows in the same order per batch, the same ends and the same summed counters (with a stage after the
window, as for MATCH_RECOGNIZE: the same ``out`` rows in order, the same dropped rows and ends)."""
from __future__ import annotations

import random
from collections import Counter

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance_compare import CASES as CASES_DIR
from sbpy.bql.runtime.testing import json_ready
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.keyed_model import run_segments
from sbpy.bql.spark.keyed_ops import ROW_COLUMNS
from sbpy.bql.spark.keyed_plan import WINDOW, KeyedPlan, plan_keyed
from sbpy.bql.spark.keyed_window_plan import window_verdict
from sbpy.bql.spark.operator import StageSpec
from test_keyed_ops import SEQ_COLUMNS, sequential, split, summary

CASES = CASES_DIR / "timeplus/windows.yaml"
NO_PLAIN_KEY = "no plain GROUP BY key besides the window columns: every tuple is one group's"


def journal(name, tuples, timestamp_field=None):
    """Journal rows ``(seq, input, ts_us, data_text, end)``, then the input's end."""
    rows = []
    for seq, d in enumerate(tuples, start=1):
        v = d.get(timestamp_field) if timestamp_field else None
        ts = int(v * 1_000_000) if isinstance(v, (int, float)) and not isinstance(v, bool) else seq * 1000
        rows.append((seq, name, ts, jf.encode_data(json_ready(d)), False))
    rows.append((len(rows) + 1, name, 0, None, True))
    return rows


def ordered(rows, columns):
    """Every row but ``stat`` in the driver's order, with decoded data (the order is part of the contract)."""
    out = []
    for r in rows:
        r = dict(zip(columns, r))
        if r["kind"] == "stat":
            continue
        data = jf.decode_data(r["data"]) if r["kind"] == "out" and r["data"] is not None else r["data"]
        out.append((r["kind"], r["node"], r["seq"], r["ts"], json_ready(data), r["error"], r["input"], r["event"]))
    return out


def check_same(stages, plan, rows, seed, rounds=4):
    """Sequential vs keyed over ``rounds`` random splits; returns the sequential rows of the last round."""
    rng = random.Random(seed)
    want = None
    for _ in range(rounds):
        batches = split(rows, rng)
        want = sequential(stages, batches)
        got = run_segments(plan, batches, buckets=rng.randint(1, 4), chaos=rng)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if plan.keyed_is_final:  # with a tail, as for MATCH_RECOGNIZE: outs ordered, drops and ends as sets
                assert ordered(g, ROW_COLUMNS) == ordered(w, SEQ_COLUMNS)
            assert summary(g, ROW_COLUMNS) == summary(w, SEQ_COLUMNS)
    return [r for batch in want for r in batch]


def _window_cases():
    if not CASES.exists():
        return []
    cases = yaml.safe_load(CASES.read_text()) or []
    out = []
    for c in cases:
        q = c.get("query", "").lower()
        if len(c.get("inputs", {})) == 1 and ("tumble(" in q or "hop(" in q) and "group by" in q:
            keys, why = window_verdict(StageSpec("w", c["query"], tuple(c["inputs"])))
            if keys is not None or why == NO_PLAIN_KEY:  # ON UPDATE / LIMIT cases stay sequential (below)
                out.append(pytest.param(c, id=c["name"]))
    return out


@pytest.mark.skipif(not CASES.exists(), reason="shared conformance cases are absent")
@pytest.mark.parametrize("case", _window_cases())
def test_conformance_case_keyed_equals_sequential(case):
    """Cases the planner keys run through ``plan_keyed``'s plan; the others that are tumble/hop AFTER
    WATERMARK GROUP BYs keyed only by the window (one route key) are forced through the same cores."""
    (name,) = case["inputs"]
    spec = StageSpec("w", case["query"], (name,))
    plan = plan_keyed([spec], (name,))
    if plan is None:
        assert window_verdict(spec)[1] == NO_PLAIN_KEY
        plan = KeyedPlan((), spec, (), (name,), (), WINDOW)
    check_same([spec], plan, journal(name, case["inputs"][name], case.get("timestamp_field")),
               seed=hash(case["name"]) & 0xFFFF)


def test_window_cases_exist():
    if CASES.exists():
        keyed = [c for c in _window_cases() if plan_keyed([StageSpec("w", c.values[0]["query"], ("src",))],
                                                         ("src",)) is not None]
        assert len(_window_cases()) >= 20 and len(keyed) >= 6


# ---------------------------------------------------------------- random streams

KEYS = ["a", "b", 1, 1.0, 2, None, True, "MISSING", float("nan")]
TIMES = st.one_of(st.integers(0, 60), st.integers(0, 60).map(lambda t: t + 0.5), st.just("bad"), st.just(None))

QUERIES = {
    "tumble": "SELECT RSTREAM k, count(*) AS n, sum(v) AS s, window_start, window_end FROM tumble(src, t, 10s) "
              "{where} GROUP BY k, window_start, window_end {having} {emit}",
    "hop": "SELECT RSTREAM k, max(v) AS m, count(*) AS n, window_start FROM hop(src, t, 5s, 15s) "
           "{where} GROUP BY k, window_start {having} {emit}",
    "two_keys": "SELECT RSTREAM k, j, avg(v) AS a, window_end FROM tumble(src, t, 7s) "
                "{where} GROUP BY j, k, window_start, window_end {having} {emit}",
}
WHERES = ["", "WHERE v > 2", "WHERE 10 / v > 1", "WHERE window_start > 0 OR v = 1"]
HAVINGS = ["", "HAVING count(*) > 1", "HAVING sum(v) > 3"]
EMITS = ["", "EMIT AFTER WATERMARK", "EMIT AFTER WATERMARK WITH DELAY 4s"]


@st.composite
def streams(draw):
    n = draw(st.integers(1, 40))
    rows = []
    base = 0
    for _ in range(n):
        if draw(st.integers(0, 9)) == 0:
            base += draw(st.integers(5, 30))  # a burst forward
        t = draw(TIMES)
        d = {"v": draw(st.one_of(st.integers(0, 5), st.just(0.0), st.just("x"))), "j": draw(st.sampled_from([0, 1]))}
        k = draw(st.sampled_from(KEYS))
        if k != "MISSING":
            d["k"] = k
        if t is not None:
            d["t"] = t + base if isinstance(t, (int, float)) else t
        rows.append(d)
    return rows


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=streams(), shape=st.sampled_from(sorted(QUERIES)), where=st.sampled_from(WHERES),
       having=st.sampled_from(HAVINGS), emit=st.sampled_from(EMITS), seed=st.integers(0, 1 << 16))
def test_random_streams_keyed_equals_sequential(rows, shape, where, having, emit, seed):
    q = QUERIES[shape].format(where=where, having=having, emit=emit)
    spec = StageSpec("w", q, ("src",))
    plan = plan_keyed([spec], ("src",))
    assert plan is not None and plan.kind == WINDOW
    check_same([spec], plan, journal("src", rows), seed, rounds=2)


def _stream(n, seed):
    rng = random.Random(seed)
    rows, t = [], 0
    for i in range(n):
        t += rng.choice([0, 0, 1, 2, 7])
        late = rng.random() < 0.1
        d = {"k": rng.choice(["a", "b", "c", 1, 1.0, None]), "v": rng.choice([0, 1, 2, 3, "x"]),
             "t": max(0, t - 40) if late else t}
        if rng.random() < 0.03:
            d["t"] = "not a time"
        rows.append(d)
    return rows


def test_late_rows_bad_values_and_failing_groups_are_exact():
    q = ("SELECT RSTREAM k, count(*) AS n, sum(v) AS s, window_start FROM hop(src, t, 5s, 10s) "
         "WHERE 10 / v >= 0 GROUP BY k, window_start HAVING count(*) >= 1")
    spec = StageSpec("w", q, ("src",))
    rows = journal("src", _stream(400, 5))
    want = check_same([spec], plan_keyed([spec], ("src",)), rows, seed=5)
    kinds = Counter((r[0], r[8]) for r in want)
    events = Counter(r[8] for r in want if r[0] == "dropped")
    assert kinds[("out", None)] >= 50
    assert events["input"] >= 5 and events["other"] >= 5  # late rows; bad times, WHERE failures


def test_stage_after_the_window_runs_in_the_tail():
    stages = [StageSpec("w", "SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, t, 5s) "
                             "GROUP BY k, window_start", ("src",)),
              StageSpec("f", "SELECT RSTREAM k, n * 10 AS n10 FROM w [RANGE 1 TUPLES] WHERE n > 1", ("w",))]
    plan = plan_keyed(stages, ("src",))
    assert plan.kind == WINDOW and plan.keyed.node == "w" and [s.node for s in plan.downstream] == ["f"]
    want = check_same(stages, plan, journal("src", _stream(300, 9)), seed=9)
    assert sum(1 for r in want if r[0] == "out") >= 20


@pytest.mark.parametrize("query, why", [
    ("SELECT RSTREAM k, count(*) AS n, window_start FROM session(src, t, 5s) GROUP BY k, window_start", "session"),
    ("SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, t, 5s) GROUP BY k, window_start "
     "EMIT ON UPDATE", "EMIT ON_UPDATE"),
    ("SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, t, 5s) GROUP BY k, window_start LIMIT 3",
     "LIMIT"),
    ("SELECT RSTREAM count(*) AS n, window_start FROM tumble(src, t, 5s) GROUP BY window_start", "no plain"),
    ("SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, t, 5s) GROUP BY k, window_start "
     "PARTITION BY j", "PARTITION BY"),
    ("SELECT RSTREAM k + 1 AS k1, count(*) AS n, window_start FROM tumble(src, t, 5s) GROUP BY k + 1, window_start",
     "not a plain field"),
])
def test_other_window_forms_stay_sequential(query, why):
    spec = StageSpec("w", query, ("src",))
    keys, reason = window_verdict(spec)
    assert keys is None and why.replace("_", " ") in reason.replace("_", " ")
    assert plan_keyed([spec], ("src",)) is None


def test_window_stage_behind_another_stage_stays_sequential():
    stages = [StageSpec("f", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES] WHERE v > 0", ("src",)),
              StageSpec("w", "SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(f, t, 5s) "
                             "GROUP BY k, window_start", ("f",))]
    assert plan_keyed(stages, ("src",)) is None


def test_column_buckets_equal_the_row_panes_of_the_sequential_operator(monkeypatch):
    """The buckets keep aggregate columns (``pane_columns``); the reference operator here keeps tagged rows."""
    q = ("SELECT RSTREAM k, count(*) AS n, sum(v) AS s, window_start FROM hop(src, t, 5s, 10s) "
         "GROUP BY k, window_start HAVING count(*) >= 2")  # sum over "x" fails its group at emission
    spec = StageSpec("w", q, ("src",))
    plan = plan_keyed([spec], ("src",))
    rows = journal("src", _stream(300, 8))
    rng = random.Random(8)
    batches = split(rows, rng)
    monkeypatch.setenv("SBPY_TIMEPLUS_PANES", "rows")
    want = sequential([spec], batches)
    monkeypatch.delenv("SBPY_TIMEPLUS_PANES")
    got = run_segments(plan, batches, buckets=3, chaos=rng)
    assert [summary(g, ROW_COLUMNS) for g in got] == [summary(w, SEQ_COLUMNS) for w in want]
    events = Counter(r[8] for batch in want for r in batch if r[0] == "dropped")
    assert events["output"] >= 3 and events["input"] >= 3  # failing groups; late rows


def test_a_bucket_reads_windows_stored_as_tagged_rows(monkeypatch):
    import datetime as dt
    import pickle

    from sbpy.bql.runtime.processor import Tuple
    from sbpy.bql.runtime.timeplus.pane_columns import ColumnPane
    from sbpy.bql.spark.keyed_window_bucket import WindowBucket

    q = ("SELECT RSTREAM k, count(*) AS n, sum(v) AS s, window_start FROM tumble(src, t, 10s) "
         "GROUP BY k, window_start")
    spec = StageSpec("w", q, ("src",))
    plan = plan_keyed([spec], ("src",))
    ts = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
    monkeypatch.setenv("SBPY_TIMEPLUS_PANES", "rows")
    old = WindowBucket(plan)
    for i, (k, v) in enumerate([("a", 1), ("b", 2.5), ("a", "x"), ("b", 4)], start=1):
        old._add(old._pane(0, lambda _: None), Tuple({"k": k, "v": v, "t": 1}, ts, i, "src"), 0)
    stored = pickle.dumps(old.panes[0].state())
    monkeypatch.delenv("SBPY_TIMEPLUS_PANES")
    new = WindowBucket(plan)
    pane = new._pane(0, lambda _: stored)
    assert isinstance(pane, ColumnPane) and [g.n for g in pane.groups().values()] == [2, 2]
    close = ("close", "w", 9, 0, None, 123, "0", None, "src", "1", None)
    want, got = [], []
    old._emit(old.panes[0], close, want, {"sent": 0, "dropped": 0})
    new._emit(pane, close, got, {"sent": 0, "dropped": 0})
    assert got == want and len(got) == 2 and {r[0] for r in got} == {"out", "dropped"}  # sum("x") fails
