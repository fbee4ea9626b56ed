"""Watermark delay, late drops, EMIT ON UPDATE / PERIODIC [REPEAT], LIMIT, global aggregation, flush."""
import datetime as dt
import time

import pytest
from timeplus_util import T0, Feeder

from sbpy.bql.errors import BQLError
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select, run_query_detailed
from sbpy.bql.runtime.timeplus import WindowProcessor

TUMBLE_COUNT = ("SELECT RSTREAM window_start, count(*) AS cnt FROM tumble(src, ts, 5 SECONDS) "
                "GROUP BY window_start")


def test_dispatch_builds_window_processor():
    assert isinstance(build_processor(parse_select(TUMBLE_COUNT)), WindowProcessor)
    assert isinstance(build_processor(parse_select("SELECT RSTREAM count(*) AS c FROM src EMIT ON UPDATE")),
                      WindowProcessor)


# ---------------------------------------------------------------- watermark, delay, late


def test_delay_postpones_close_and_moves_the_late_threshold():
    f = Feeder(TUMBLE_COUNT + " EMIT AFTER WATERMARK WITH DELAY 2 SECONDS")
    assert f.push(ts=T0 + 1) == []
    assert f.push(ts=T0 + 6) == []  # C = 4: nothing closes
    assert f.push(ts=T0 + 4) == []  # kept: window [0,5) still open
    assert f.push(ts=T0 + 7) == [{"window_start": T0, "cnt": 2}]  # C = 5 closes [0,5)
    f.push(ts=T0 + 3)
    assert len(f.dropped) == 1 and f.dropped[0].tuple.data["ts"] == T0 + 3
    assert "late" in f.dropped[0].error
    assert f.finish() == [{"window_start": T0 + 5, "cnt": 2}]


def test_late_rule_uses_the_aligned_watermark():
    # tumble 5 s, delay 2 s, max :50 → C = :48, aligned watermark :45: :45 kept, :44 dropped (design pitfall 4)
    f = Feeder(TUMBLE_COUNT + " EMIT AFTER WATERMARK WITH DELAY 2 SECONDS")
    f.push(ts=T0 + 50)
    f.push(ts=T0 + 45)
    f.push(ts=T0 + 44)
    assert [d.tuple.data["ts"] for d in f.dropped] == [T0 + 44]


def test_late_tuples_reach_dropped_in_the_harness():
    res = run_query_detailed(TUMBLE_COUNT, {"src": [{"ts": T0 + 7}, {"ts": T0 + 1}]}, timestamp_field="ts")
    assert res.outputs == [{"window_start": T0 + 5, "cnt": 1}]
    assert len(res.dropped) == 1 and res.dropped[0].event_type == "input"


def test_where_filtered_tuples_advance_the_watermark():
    q = ("SELECT RSTREAM window_start, count(*) AS cnt FROM tumble(src, ts, 5 SECONDS) WHERE keep "
         "GROUP BY window_start")
    f = Feeder(q)
    f.push(ts=T0 + 1, keep=True)
    assert f.push(ts=T0 + 9, keep=False) == [{"window_start": T0, "cnt": 1}]


def test_one_tuple_closes_several_windows_in_start_order():
    q = ("SELECT RSTREAM k, window_start, count(*) AS cnt FROM tumble(src, ts, 5 SECONDS) "
         "GROUP BY k, window_start EMIT AFTER WATERMARK WITH DELAY 2 SECONDS")
    f = Feeder(q)
    f.push(k="b", ts=T0 + 6)  # the [5,10) pane is created first
    f.push(k="a", ts=T0 + 1)
    out = f.push(k="c", ts=T0 + 30)
    assert [r["window_start"] for r in out] == [T0, T0 + 5]


def test_finish_flushes_open_windows_in_start_order():
    q = ("SELECT RSTREAM window_start, count(*) AS cnt FROM hop(src, ts, 1 SECONDS, 3 SECONDS) "
         "GROUP BY window_start EMIT AFTER WATERMARK WITH DELAY 10 SECONDS")
    f = Feeder(q)
    assert f.push(ts=T0 + 5) == [] and f.push(ts=T0 + 4) == []
    assert [r["window_start"] for r in f.finish()] == [T0 + 2, T0 + 3, T0 + 4, T0 + 5]
    assert f.finish() == []  # flushed once


def test_having_applies_at_close():
    q = ("SELECT RSTREAM k, count(*) AS cnt, window_start FROM tumble(src, ts, 5 SECONDS) "
         "GROUP BY k, window_start HAVING count(*) > 1")
    assert Feeder(q).run([{"k": "a", "ts": T0}, {"k": "a", "ts": T0 + 1}, {"k": "b", "ts": T0 + 2}]) == [
        {"k": "a", "cnt": 2, "window_start": T0}]


# ---------------------------------------------------------------- ON UPDATE


def test_on_update_emits_changed_groups_and_nothing_at_close_or_end():
    q = ("SELECT RSTREAM k, count(*) AS cnt, window_start FROM tumble(src, ts, 5 SECONDS) "
         "GROUP BY k, window_start EMIT ON UPDATE")
    f = Feeder(q)
    assert f.push(k="a", ts=T0) == [{"k": "a", "cnt": 1, "window_start": T0}]
    assert f.push(k="b", ts=T0 + 1) == [{"k": "b", "cnt": 1, "window_start": T0}]
    assert f.push(k="a", ts=T0 + 2) == [{"k": "a", "cnt": 2, "window_start": T0}]
    assert f.push(k="a", ts=T0 + 5) == [{"k": "a", "cnt": 1, "window_start": T0 + 5}]
    assert f.finish() == []


def test_on_update_with_delay_keeps_window_open():
    q = TUMBLE_COUNT + " EMIT ON UPDATE WITH DELAY 3 SECONDS"
    f = Feeder(q)
    f.push(ts=T0 + 1)
    f.push(ts=T0 + 6)
    assert f.push(ts=T0 + 2) == [{"window_start": T0, "cnt": 2}]
    f.push(ts=T0 + 9)  # C = 6 closes [0,5)
    assert f.push(ts=T0 + 3) == [] and len(f.dropped) == 1


def test_on_update_having_filters_updates():
    q = "SELECT RSTREAM k, count(*) AS cnt FROM src GROUP BY k HAVING count(*) >= 2 EMIT ON UPDATE"
    f = Feeder(q)
    assert f.push(k="a", ts=T0) == []
    assert f.push(k="a", ts=T0) == [{"k": "a", "cnt": 2}]


def test_global_aggregation_on_update():
    q = "SELECT RSTREAM sum(v) AS total, count(*) AS cnt FROM src EMIT ON UPDATE"
    f = Feeder(q)
    assert f.push(v=2, ts=T0 + 9) == [{"total": 2, "cnt": 1}]
    assert f.push(v=3, ts=T0) == [{"total": 5, "cnt": 2}]  # no windows: nothing is late
    assert f.finish() == []


def test_bare_stream_aggregation_without_emit_is_rejected():
    from sbpy.bql.ast import Select

    stmt = parse_select("SELECT RSTREAM count(*) AS c FROM src EMIT ON UPDATE")
    no_emit = Select(stmt.emitter, stmt.projections, stmt.from_items)
    with pytest.raises(BQLError):
        WindowProcessor(no_emit)
    with pytest.raises(BQLError):  # the analyzer rejects it first
        parse_select("SELECT RSTREAM count(*) AS c FROM src EMIT AFTER WATERMARK")


# ---------------------------------------------------------------- PERIODIC


def test_periodic_emits_changed_groups_per_period():
    q = "SELECT RSTREAM k, count(*) AS cnt FROM src GROUP BY k EMIT PERIODIC 1 SECONDS"
    f = Feeder(q)
    assert f.push(k="a", ts=T0) == [] and f.push(k="b", ts=T0) == []
    assert f.tick(1000) == [{"k": "a", "cnt": 1}, {"k": "b", "cnt": 1}]  # the first tick is due
    f.push(k="a", ts=T0)
    assert f.tick(1000.5) == []  # same period
    assert f.tick(1001) == [{"k": "a", "cnt": 2}]
    assert f.tick(1002) == []  # nothing changed
    f.push(k="b", ts=T0)
    assert f.finish() == [{"k": "b", "cnt": 2}]  # the last changes are not lost


def test_periodic_repeat_emits_all_groups_every_period():
    q = "SELECT RSTREAM k, count(*) AS cnt FROM src GROUP BY k EMIT PERIODIC 2 SECONDS REPEAT"
    f = Feeder(q)
    assert f.tick(1000) == []  # no groups yet
    f.push(k="a", ts=T0)
    f.push(k="b", ts=T0)
    assert f.tick(1001) == []  # next boundary is 1002
    assert f.tick(1002) == [{"k": "a", "cnt": 1}, {"k": "b", "cnt": 1}]
    assert f.tick(1004.1) == [{"k": "a", "cnt": 1}, {"k": "b", "cnt": 1}]
    assert f.finish() == [{"k": "a", "cnt": 1}, {"k": "b", "cnt": 1}]


def test_periodic_over_windows_reports_closed_windows_once():
    q = TUMBLE_COUNT + " EMIT PERIODIC 1 SECONDS"
    f = Feeder(q)
    f.push(ts=T0 + 1)
    f.push(ts=T0 + 7)  # closes [0,5) before any tick: kept until the tick
    assert f.tick(1000) == [{"window_start": T0, "cnt": 1}, {"window_start": T0 + 5, "cnt": 1}]
    f.push(ts=T0 + 8)
    assert f.tick(1001) == [{"window_start": T0 + 5, "cnt": 2}]
    f.push(ts=T0 + 3)
    assert len(f.dropped) == 1  # late: the watermark still applies


def test_periodic_tick_outputs_carry_the_tick_time():
    proc = build_processor(parse_select("SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 1 SECONDS"))
    now = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
    proc.process(Tuple({"x": 1}, now - dt.timedelta(hours=1), 1, "src"))
    res = proc.tick(now)
    assert [t.data for t in res.outputs] == [{"c": 1}] and res.outputs[0].ts == now


def test_periodic_wall_clock():
    proc = build_processor(parse_select("SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 50 MILLISECONDS"))
    utcnow = lambda: dt.datetime.now(dt.timezone.utc)  # noqa: E731
    proc.process(Tuple({}, utcnow(), 1, "src"))
    assert [t.data for t in proc.tick(utcnow()).outputs] == [{"c": 1}]
    proc.process(Tuple({}, utcnow(), 2, "src"))
    time.sleep(0.06)
    assert [t.data for t in proc.tick(utcnow()).outputs] == [{"c": 2}]


def test_tick_is_a_no_op_for_other_policies():
    f = Feeder("SELECT RSTREAM count(*) AS c FROM src EMIT ON UPDATE")
    f.push(ts=T0)
    assert f.tick(1000) == []


# ---------------------------------------------------------------- LIMIT


def test_limit_stops_mid_emission_and_sets_done():
    q = ("SELECT RSTREAM k, count(*) AS cnt FROM tumble(src, ts, 5 SECONDS) GROUP BY k, window_start LIMIT 2")
    f = Feeder(q)
    for k in "abc":
        f.push(k=k, ts=T0)
    out = f.push(k="d", ts=T0 + 5)
    assert len(out) == 2 and f.done
    assert f.push(k="e", ts=T0 + 20) == [] and f.finish() == []


def test_limit_on_non_aggregating_window_query():
    q = "SELECT RSTREAM n, window_start FROM hop(src, ts, 1 SECONDS, 2 SECONDS) LIMIT 3"
    f = Feeder(q)
    assert len(f.push(n=1, ts=T0)) == 2 and not f.done
    assert f.push(n=2, ts=T0) == [{"n": 2, "window_start": T0 - 1}] and f.done


def test_limit_during_end_of_input_flush():
    q = TUMBLE_COUNT + " LIMIT 1"
    res = run_query_detailed(q, {"src": [{"ts": T0}, {"ts": T0 + 30}]}, timestamp_field="ts")
    assert res.outputs == [{"window_start": T0, "cnt": 1}] and res.done
