"""Window assignment: tumble, hop, session (gap boundary, max duration), bounds, time columns, tagging."""
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from timeplus_util import T0, Feeder, at, build

from sbpy.bql.errors import BQLError
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import run_query
from sbpy.bql.runtime.timeplus.assign import FixedWindows
from sbpy.bql.runtime.timeplus.sessions import SessionTracker
from sbpy.bql.runtime.timeplus.timecol import bound_value, to_micros

US = 1_000_000


# ---------------------------------------------------------------- units


def test_tumble_grid_is_epoch_aligned_and_half_open():
    w = FixedWindows(5 * US, 5 * US)
    assert w.windows_for(7 * US) == [(5 * US, 10 * US)]
    assert w.windows_for(10 * US) == [(10 * US, 15 * US)]  # [start, end): the end belongs to the next one
    assert w.windows_for(-1) == [(-5 * US, 0)]
    assert w.closed_end(14 * US) == 10 * US and w.closed_end(15 * US) == 15 * US


def test_hop_windows_in_start_order_and_closed_end():
    w = FixedWindows(3 * US, 5 * US)
    assert w.windows_for(4 * US) == [(0, 5 * US), (3 * US, 8 * US)]
    assert w.windows_for(3 * US) == [(0, 5 * US), (3 * US, 8 * US)]
    assert len(FixedWindows(10 * US, 30 * US).windows_for(5 * US)) == 3
    assert w.closed_end(9 * US) == 8 * US  # ends on 2, 5, 8, 11 …


def test_session_tracker_gap_and_max_rules():
    s = SessionTracker(2 * US, 5 * US)
    p = s.place("k", 0)
    assert p.pid is None and p.end == 2 * US
    s.commit("k", 7, p)
    assert s.place("k", 2 * US - 1).pid == 7  # inside the gap
    assert s.place("k", 2 * US).pid is None  # exactly one gap later: new session
    s.commit("k", 7, s.place("k", US))
    s.commit("k", 7, s.place("k", 2 * US))
    s.commit("k", 7, s.place("k", 3 * US))
    joined = s.place("k", 4 * US + 1)
    assert joined.pid == 7 and joined.end == 5 * US  # capped at start + max
    assert s.place("k", 5 * US).pid is None  # start + max: new session
    assert s.place("other", US).pid is None


def test_time_values_and_bounds():
    assert to_micros(1) == US and to_micros(1.5) == 1_500_000
    assert to_micros(dt.datetime(1970, 1, 1, 0, 0, 2, tzinfo=dt.timezone.utc)) == 2 * US
    assert to_micros("1970-01-01T00:00:03Z") == 3 * US
    assert bound_value(5 * US) == 5 and type(bound_value(5 * US)) is int
    assert bound_value(5_500_000) == 5.5
    for bad in (None, True, "nope", [1]):
        with pytest.raises(BQLError):
            to_micros(bad)


# ---------------------------------------------------------------- tumble / hop


def test_tumble_counts_and_flush_in_start_order():
    q = "SELECT RSTREAM window_start, window_end, count(*) AS cnt FROM tumble(src, ts, 5 SECONDS) GROUP BY window_start, window_end"
    f = Feeder(q)
    assert f.push(ts=T0) == [] and f.push(ts=T0 + 4) == []
    assert f.push(ts=T0 + 5) == [{"window_start": T0, "window_end": T0 + 5, "cnt": 2}]
    assert f.push(ts=T0 + 11) == [{"window_start": T0 + 5, "window_end": T0 + 10, "cnt": 1}]
    assert f.finish() == [{"window_start": T0 + 10, "window_end": T0 + 15, "cnt": 1}]


def test_millisecond_sizes_give_float_bounds():
    q = "SELECT RSTREAM window_start, window_end, count(*) AS cnt FROM tumble(src, ts, 500 MILLISECONDS) GROUP BY window_start, window_end"
    out = Feeder(q).run([{"ts": T0 + 0.2}, {"ts": T0 + 0.7}])
    assert out == [{"window_start": T0, "window_end": T0 + 0.5, "cnt": 1},
                   {"window_start": T0 + 0.5, "window_end": T0 + 1, "cnt": 1}]
    assert type(out[0]["window_start"]) is int and type(out[0]["window_end"]) is float


def test_time_column_as_timestamp_and_tuple_timestamp():
    q = ("SELECT RSTREAM window_start, count(*) AS cnt FROM tumble(src, at, 10 SECONDS) GROUP BY window_start")
    rows = [{"at": "2020-02-02T20:00:01Z"}, {"at": "2020-02-02T20:00:12Z"}]
    assert run_query(q, {"src": rows}) == [{"window_start": T0, "cnt": 1}, {"window_start": T0 + 10, "cnt": 1}]
    q2 = "SELECT RSTREAM window_start, count(*) AS cnt FROM tumble(src, 10 SECONDS) GROUP BY window_start"
    assert run_query(q2, {"src": [{"ts": T0 + 1}, {"ts": T0 + 2}]}, timestamp_field="ts") == [
        {"window_start": T0, "cnt": 2}]


def test_bad_time_value_is_dropped_not_fatal():
    q = "SELECT RSTREAM count(*) AS cnt, window_start FROM tumble(src, t, 5 SECONDS) GROUP BY window_start"
    f = Feeder(q)
    f.push(ts=T0, t="not a time")
    f.push(ts=T0, t=T0 + 1)
    assert len(f.dropped) == 1
    assert f.finish() == [{"cnt": 1, "window_start": T0}]


def test_hop_where_sees_window_columns():
    q = ("SELECT RSTREAM window_start, count(*) AS cnt FROM hop(src, ts, 5 SECONDS, 10 SECONDS) "
         f"WHERE window_start >= {T0} GROUP BY window_start")
    assert Feeder(q).run([{"ts": T0 + 6}]) == [{"window_start": T0, "cnt": 1}, {"window_start": T0 + 5, "cnt": 1}]


def test_aliased_window_function_and_prefixed_fields():
    q = ("SELECT RSTREAM w:k AS k, count(*) AS cnt, w:window_end AS window_end FROM tumble(src, ts, 5 SECONDS) AS w "
         "GROUP BY w:k, w:window_end")
    assert Feeder(q).run([{"k": "a", "ts": T0}]) == [{"k": "a", "cnt": 1, "window_end": T0 + 5}]


# ---------------------------------------------------------------- sessions


def test_session_gap_boundary_and_max_duration():
    q = ("SELECT RSTREAM uid, count(*) AS cnt, window_start, window_end FROM session(clicks, ts, 2 SECONDS, 3 SECONDS) "
         "GROUP BY uid, window_start, window_end")
    f = Feeder(q)
    rows = [(0, []), (1, []), (2.5, [])]  # 2.5 < 1+2 and < 0+3: joins
    for t, want in rows:
        assert f.push(uid="u", ts=T0 + t) == want
    # 3.0 == start + max: new session; the old one ends at min(2.5+2, 0+3) = 3 <= C and closes
    assert f.push(uid="u", ts=T0 + 3) == [{"uid": "u", "cnt": 3, "window_start": T0, "window_end": T0 + 3}]
    assert f.push(uid="u", ts=T0 + 5) == [{"uid": "u", "cnt": 1, "window_start": T0 + 3, "window_end": T0 + 5}]
    assert f.finish() == [{"uid": "u", "cnt": 1, "window_start": T0 + 5, "window_end": T0 + 7}]


def test_sessions_are_per_key_and_flushed_in_start_order():
    q = ("SELECT RSTREAM k, count(*) AS cnt, window_start FROM session(src, ts, 10 SECONDS) "
         "GROUP BY k, window_start, window_end")
    out = Feeder(q).run([{"k": "b", "ts": T0 + 1}, {"k": "a", "ts": T0 + 2}, {"k": "b", "ts": T0 + 3}])
    assert out == [{"k": "b", "cnt": 2, "window_start": T0 + 1}, {"k": "a", "cnt": 1, "window_start": T0 + 2}]


def test_session_late_rule_is_not_aligned():
    q = "SELECT RSTREAM count(*) AS cnt, window_start FROM session(src, ts, 5 SECONDS) GROUP BY window_start"
    f = Feeder(q)
    f.push(ts=T0 + 10)
    f.push(ts=T0 + 9)  # >= C = 10 - 0? no: 9 < 10 → late
    assert len(f.dropped) == 1
    f2 = Feeder(q.replace("GROUP BY window_start", "GROUP BY window_start EMIT AFTER WATERMARK WITH DELAY 2 SECONDS"))
    f2.push(ts=T0 + 10)
    f2.push(ts=T0 + 9)  # 9 >= 10 - 2: joins the session
    assert f2.dropped == [] and f2.finish() == [{"cnt": 2, "window_start": T0 + 9}]


# ---------------------------------------------------------------- non-aggregating tagging


def test_non_aggregating_tumble_tags_at_once_and_never_drops():
    q = "SELECT RSTREAM *, window_start FROM tumble(src, ts, 5 SECONDS)"
    f = Feeder(q)
    assert f.push(ts=T0 + 7, window_start="input value") == [
        {"ts": T0 + 7, "window_start": T0 + 5, "window_end": T0 + 10}]  # window columns win
    assert f.push(ts=T0 + 1) == [{"ts": T0 + 1, "window_start": T0, "window_end": T0 + 5}]
    assert f.dropped == [] and f.finish() == []


def test_non_aggregating_hop_emits_one_row_per_window():
    q = "SELECT RSTREAM n, window_start FROM hop(src, ts, 2 SECONDS, 4 SECONDS) WHERE n > 0"
    f = Feeder(q)
    assert f.push(n=1, ts=T0 + 3) == [{"n": 1, "window_start": T0}, {"n": 1, "window_start": T0 + 2}]
    assert f.push(n=0, ts=T0 + 3) == []


def test_non_aggregating_session_tags_current_bounds():
    q = "SELECT RSTREAM n, window_start, window_end FROM session(src, ts, 2 SECONDS)"
    f = Feeder(q)
    assert f.push(n=1, ts=T0) == [{"n": 1, "window_start": T0, "window_end": T0 + 2}]
    assert f.push(n=2, ts=T0 + 1) == [{"n": 2, "window_start": T0, "window_end": T0 + 3}]
    assert f.push(n=3, ts=T0 + 5) == [{"n": 3, "window_start": T0 + 5, "window_end": T0 + 7}]


def test_bare_stream_without_aggregation_is_a_tail():
    q = "SELECT RSTREAM n FROM src WHERE n > 1 EMIT ON UPDATE"
    assert Feeder(q).run([{"n": 1, "ts": T0}, {"n": 2, "ts": T0}]) == [{"n": 2}]


def test_timestamps_of_outputs_come_from_the_causing_tuple():
    q = "SELECT RSTREAM count(*) AS cnt, window_start FROM tumble(src, ts, 5 SECONDS) GROUP BY window_start"
    f = Feeder(q)
    f.step(ts=T0 + 1)
    res = f.step(ts=T0 + 6)
    assert [t.ts for t in res.outputs] == [at(T0 + 6)] and res.outputs[0].seq == 2
    res = f.proc.finish("src")
    assert [t.ts for t in res.outputs] == [at(T0 + 6)]


def test_session_on_update_reports_moving_bounds():
    q = ("SELECT RSTREAM k, count(*) AS cnt, window_start, window_end FROM session(src, ts, 2 SECONDS) "
         "GROUP BY k, window_start, window_end EMIT ON UPDATE")
    f = Feeder(q)
    assert f.push(k="a", ts=T0) == [{"k": "a", "cnt": 1, "window_start": T0, "window_end": T0 + 2}]
    assert f.push(k="a", ts=T0 + 1) == [{"k": "a", "cnt": 2, "window_start": T0, "window_end": T0 + 3}]
    assert f.push(k="b", ts=T0 + 1.5) == [{"k": "b", "cnt": 1, "window_start": T0 + 1.5, "window_end": T0 + 3.5}]
    assert f.finish() == []


def test_many_session_keys_close_by_watermark():
    q = ("SELECT RSTREAM k, count(*) AS cnt FROM session(src, ts, 2 SECONDS) GROUP BY k, window_start")
    f = Feeder(q)
    out = []
    for i in range(200):
        out += f.push(k=i % 10, ts=T0 + i * 0.1)  # each key every second: sessions capped at 5 gaps
    out += f.push(k="z", ts=T0 + 100)
    assert len(out) == 20 and all(r["cnt"] == 10 for r in out)


def test_hop_late_tuple_dropped_from_all_windows():
    q = "SELECT RSTREAM window_start, count(*) AS cnt FROM hop(src, ts, 2 SECONDS, 6 SECONDS) GROUP BY window_start"
    f = Feeder(q)
    f.push(ts=T0 + 10)
    f.push(ts=T0 + 17)
    f.push(ts=T0 + 15)  # windows [12,18), [14,20) are open, but 15 < aligned watermark 16
    assert len(f.dropped) == 1


@pytest.mark.parametrize("panes", ["columns", "rows"])
def test_session_whose_end_moves_earlier_closes_at_its_new_end(monkeypatch, panes):
    """A tuple before a session's start (not late under a long delay) pulls ``start + max`` — and so the
    end — earlier; the session closes as soon as the watermark passes the new end, not the old one."""
    if panes == "rows":
        monkeypatch.setenv("SBPY_TIMEPLUS_PANES", "rows")
    q = ("SELECT RSTREAM k, count(*) AS n, window_start, window_end FROM session(src, ts, 2s, 2s) "
         "GROUP BY k, window_start, window_end EMIT AFTER WATERMARK WITH DELAY 5s")
    f = Feeder(q)
    assert f.push(ts=T0 + 10, k="a") == []  # session [10, 12)
    assert f.push(ts=T0 + 9, k="a") == []  # joins: [9, min(12, 9 + 2)) = [9, 11)
    assert f.push(ts=T0 + 15.9, k="b") == []  # close bound 10.9 < 11
    assert f.push(ts=T0 + 16.1, k="b") == [  # close bound 11.1 >= 11: closes here, not at 12
        {"k": "a", "n": 2, "window_start": T0 + 9, "window_end": T0 + 11}]
    assert f.dropped == []


def _outcome(fn):
    try:
        return ("value", fn())
    except Exception as err:  # noqa: BLE001 - the error itself is compared
        return ("error", type(err), str(err))


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                       st.sampled_from(["2020-02-02T20:00:01Z", "2020-02-02 20:00:01.5", "x", ""]),
                       st.just([1]), st.just({"a": 1})),
       present=st.booleans(),
       from_=st.sampled_from(["tumble(src, tt, 5 SECONDS)", "tumble(src, src:tt, 5 SECONDS)",
                              "session(src, tt, 2 SECONDS)"]))
def test_the_time_column_read_inline_is_the_compiled_closures(value, present, from_):
    """``WindowProcessor._time`` reads a plain time field inline; its value or error is the compiled
    time expression's (both the fixed step and the general step use ``_time``, so this is its reference)."""
    proc = build(f"SELECT RSTREAM count(*) AS n, window_start FROM {from_} GROUP BY window_start")
    assert proc.time_field == "tt"
    tup = Tuple({"tt": value, "k": 1} if present else {"k": 1}, at(T0), 1, "src")
    assert _outcome(lambda: proc._time(tup)) == _outcome(lambda: to_micros(proc.time_fn(proc._env(tup))))
