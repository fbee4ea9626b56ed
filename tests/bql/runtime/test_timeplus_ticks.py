"""When a Timeplus query wants its next wall-clock tick (``next_tick``) and its period (``tick_period``)."""
import datetime as dt

from timeplus_util import T0, Feeder, at

from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import next_tick_of, tick_period_of
from sbpy.bql.runtime.testing import parse_select

GLOBAL = "SELECT RSTREAM k, count(*) AS c FROM src GROUP BY k EMIT PERIODIC 1 SECONDS"
TUMBLE = ("SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, ts, 5 SECONDS) GROUP BY window_start "
          "EMIT PERIODIC 500 MILLISECONDS")


def test_period_is_known_before_any_tuple():
    assert tick_period_of(build_processor(parse_select(GLOBAL))) == dt.timedelta(seconds=1)
    assert tick_period_of(build_processor(parse_select(TUMBLE))) == dt.timedelta(milliseconds=500)
    for q in ("SELECT RSTREAM count(*) AS c FROM src EMIT ON UPDATE",
              "SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, ts, 5 SECONDS) GROUP BY window_start",
              "SELECT RSTREAM * FROM src EMIT PERIODIC 1 SECONDS",  # non-aggregating: emits at once
              "SELECT RSTREAM * FROM src [RANGE 1 TUPLES]"):
        proc = build_processor(parse_select(q))
        assert tick_period_of(proc) is None and next_tick_of(proc) is None, q


def test_next_tick_follows_changes_and_period_boundaries():
    f = Feeder(GLOBAL)
    assert f.proc.next_tick() is None  # nothing to emit
    f.push(ts=T0, k="a")
    assert f.proc.next_tick() <= at(0)  # never ticked: the first tick is due at once
    assert f.tick(1000.25) == [{"k": "a", "c": 1}]
    assert f.proc.next_tick() is None  # nothing changed since the emission: no wake-up
    f.push(ts=T0 + 1, k="b")
    assert f.proc.next_tick() == at(1001)  # the next boundary
    assert f.tick(1001) == [{"k": "b", "c": 1}]
    f.finish()
    f.push(ts=T0 + 2, k="b")
    assert f.proc.next_tick() is None  # finished


def test_next_tick_with_repeat_never_idles_once_a_group_exists():
    f = Feeder(GLOBAL + " REPEAT")
    assert f.proc.next_tick() is None
    f.push(ts=T0, k="a")
    f.tick(1000)
    assert f.proc.next_tick() == at(1001)
    assert f.tick(1001) == [{"k": "a", "c": 1}]
    assert f.proc.next_tick() == at(1002)


def test_next_tick_keeps_closed_windows_until_they_are_emitted():
    f = Feeder(TUMBLE)
    f.push(ts=T0 + 1)
    f.tick(1000)
    assert f.proc.next_tick() is None
    f.push(ts=T0 + 7)  # closes [0,5) (unchanged since the tick) and opens [5,10)
    assert f.proc.next_tick() == at(1000.5)
    assert f.tick(1000.5) == [{"window_start": T0 + 5, "c": 1}]
    assert f.proc.next_tick() is None


def test_limit_reached_wants_no_more_ticks():
    f = Feeder("SELECT RSTREAM k, count(*) AS c FROM src GROUP BY k LIMIT 1 EMIT PERIODIC 1 SECONDS REPEAT")
    f.push(ts=T0, k="a")
    f.push(ts=T0, k="b")
    assert f.tick(1000) == [{"k": "a", "c": 1}] and f.done
    assert f.proc.next_tick() is None


def test_union_takes_the_earliest_branch():
    q = (GLOBAL + " UNION ALL SELECT RSTREAM k, count(*) AS c FROM other GROUP BY k EMIT PERIODIC 2 SECONDS")
    from sbpy.bql.runtime.processor import Tuple

    proc = build_processor(parse_select(q))
    assert proc.tick_period() == dt.timedelta(seconds=1)
    assert proc.next_tick() is None
    proc.process(Tuple({"k": "x"}, at(T0), 1, "other"))
    proc.tick(at(1000))
    proc.process(Tuple({"k": "x"}, at(T0), 2, "other"))
    assert proc.next_tick() == at(1002)
    proc.process(Tuple({"k": "y"}, at(T0), 3, "src"))
    assert proc.next_tick() == at(1001)  # the src branch ticked with the union at 1000: its next boundary
