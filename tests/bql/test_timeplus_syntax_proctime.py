"""``now64()`` and processing-time windows: ``tumble(s, now64(), 5s)`` (docs/timeplus.md).

The clock is injected (``proc.clock``), so no test depends on how fast it runs. Reference: the same
query over an event-time column ``pt`` that holds, for each tuple, the clock value at its arrival; a
wall-clock tick at ``now`` is the reference's heartbeat tuple at ``pt = now`` that WHERE drops (it still
moves the watermark, design rule 13), so both close the same windows at the same steps.
"""
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
MS = dt.timedelta(milliseconds=1)

QUERIES = [
    "SELECT RSTREAM window_start, window_end, k, count(*) AS c, sum(v) AS s FROM tumble(src, {t}, 2s) "
    "WHERE hb = false GROUP BY window_start, window_end, k",
    "SELECT RSTREAM window_start, count(*) AS c FROM hop(src, {t}, 1s, 3s) WHERE hb = false "
    "GROUP BY window_start EMIT AFTER WATERMARK WITH DELAY 500ms",
    "SELECT RSTREAM window_start, window_end, k, count(*) AS c FROM session(src, {t}, 1s) WHERE hb = false "
    "GROUP BY window_start, window_end, k",
    "SELECT RSTREAM window_start, k, count(*) AS c FROM tumble(src, {t}, 2s) WHERE hb = false "
    "GROUP BY window_start, k EMIT ON UPDATE",
]
# one step: ("row", gap in ms, key, value) or ("tick", gap in ms)
steps = st.lists(st.one_of(
    st.tuples(st.just("row"), st.integers(0, 1500), st.sampled_from("ab"), st.integers(0, 9)),
    st.tuples(st.just("tick"), st.integers(0, 2500)),
), max_size=30)


class Clock:
    def __init__(self):
        self.now = T0

    def __call__(self):
        return self.now


def _data(step):
    return [json_ready(t.data) for t in step.outputs]


def _run_both(template, plan):
    clock = Clock()
    proc = build_processor(parse_select(template.format(t="now64(3)")))
    proc.clock = clock
    ref = build_processor(parse_select(template.format(t="pt")))
    got, want = [], []
    for seq, step in enumerate(plan, start=1):
        clock.now += step[1] * MS
        old = T0 - dt.timedelta(days=1)  # the tuple timestamp plays no part in processing time
        if step[0] == "row":
            row = {"k": step[2], "v": step[3], "hb": False}
            got.append(_data(proc.process(Tuple(dict(row), old, seq, "src"))))
            want.append(_data(ref.process(Tuple(dict(row, pt=clock.now), old, seq, "src"))))
        else:
            got.append(_data(proc.tick(clock.now)))
            heartbeat = {"pt": clock.now, "hb": True, "k": "z", "v": 0}  # k: sessions key it before WHERE
            want.append(_data(ref.process(Tuple(heartbeat, old, seq, "src"))))
    got.append(_data(proc.finish("src")))
    want.append(_data(ref.finish("src")))
    return proc, got, want


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(QUERIES), steps)
def test_processing_time_windows_equal_event_time_over_the_arrival_clock(template, plan):
    _, got, want = _run_both(template, plan)
    assert got == want


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 1500), min_size=1, max_size=20))
def test_next_tick_is_the_first_close_of_an_open_window(gaps):
    proc = build_processor(parse_select(QUERIES[1].format(t="now64(3)")))  # hop 1s / 3s, delay 500ms
    clock = Clock()
    proc.clock = clock
    arrivals = []
    for seq, gap in enumerate(gaps, start=1):
        clock.now += gap * MS
        arrivals.append((clock.now - T0) // MS)
        proc.process(Tuple({"k": "a", "v": 1, "hb": False}, T0, seq, "src"))
    base = (T0 - dt.datetime(1970, 1, 1, tzinfo=UTC)) // MS  # model in epoch ms: T0 is on the grid
    ends = {base + s + 3000 for t in arrivals for s in range(t - t % 1000 - 2000, t + 1, 1000) if s <= t < s + 3000}
    watermark = base + arrivals[-1] - 500
    due = T0 + (min(e for e in ends if e > watermark) + 500 - base) * MS
    assert proc.next_tick() == due
    assert _data(proc.tick(due - dt.timedelta(microseconds=1))) == []
    assert _data(proc.tick(due)) != []


def test_ticks_come_at_the_gcd_of_the_windows_and_event_time_queries_need_none():
    def period(q):
        return build_processor(parse_select(q)).tick_period()

    assert period("SELECT RSTREAM count(*) AS c FROM tumble(src, now64(), 5s) GROUP BY window_start") \
        == dt.timedelta(seconds=5)
    assert period("SELECT RSTREAM count(*) AS c FROM hop(src, now(), 2s, 5s) GROUP BY window_start "
                  "EMIT AFTER WATERMARK WITH DELAY 500ms") == dt.timedelta(milliseconds=500)
    assert period("SELECT RSTREAM count(*) AS c FROM tumble(src, ts, 5s) GROUP BY window_start") is None


def test_seed_processing_time_example():
    q = ('SELECT device, max(cpu_usage) FROM tumble(devices, now64(3, "UTC"), 5s) '
         "GROUP BY device, window_end EMIT AFTER WATERMARK WITH DELAY 2s")
    proc = build_processor(parse_select(q))
    clock = Clock()
    proc.clock = clock
    out = []
    for seq, (ms, device, cpu) in enumerate([(0, "d1", 10), (1000, "d1", 30), (1000, "d2", 5), (4000, "d1", 20)], 1):
        clock.now += ms * MS
        out += _data(proc.process(Tuple({"device": device, "cpu_usage": cpu}, T0, seq, "devices")))
    assert out == []  # 6 s after T0: the first window ends at T0+5s, the delay holds it until T0+7s
    clock.now += 1000 * MS
    assert sorted(map(str, _data(proc.tick(clock.now)))) == sorted(map(str, [
        {"device": "d1", "max": 30}, {"device": "d2", "max": 5}]))


# ---------------------------------------------------------------- now64()


def _now64_row(projection, now):
    proc = build_processor(parse_select(f"SELECT {projection} FROM src"))
    proc.clock = lambda: now
    step = proc.process(Tuple({"x": 1}, T0, 1, "src"))
    return _data(step), [d.error for d in step.dropped]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**12), st.integers(0, 9))
def test_now64_cuts_the_clock_to_its_precision(micros, precision):
    now = T0 + dt.timedelta(microseconds=micros)
    rows, _ = _now64_row(f"now64({precision}) AS t, now64() AS d", now)
    step = 10 ** max(0, 6 - precision)
    whole = micros - micros % step
    assert rows == [{"t": json_ready(T0 + dt.timedelta(microseconds=whole)),
                     "d": json_ready(T0 + dt.timedelta(microseconds=micros - micros % 1000))}]


@pytest.mark.parametrize("call,error", [
    ("now64(10)", "function 'now64': 'precision' must be from 0 to 9, got 10"),
    ('now64(3, "Nowhere/City")', "function 'now64': unknown time zone 'Nowhere/City'"),
])
def test_bad_now64_arguments_drop_the_tuple(call, error):
    rows, errors = _now64_row(f"{call} AS t", T0)
    assert rows == [] and errors == [error]


def test_now64_arity_is_an_analyzer_error():
    with pytest.raises(BQLAnalysisError, match="function 'now64' takes 0 to 2 arguments, got 3"):
        parse_select('SELECT now64(3, "UTC", 1) AS t FROM src')
