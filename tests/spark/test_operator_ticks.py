"""Wall-clock ticks of the fused pipeline (pure Python): ``Pipeline.tick`` order and delivery, the
timeout handling of ``state_function`` with a stand-in ``GroupState``, and ``tick_interval_ms``."""
from __future__ import annotations

import datetime as dt
import pickle

import pytest

from sbpy.bql.runtime.processor import StepResult, Tuple
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.operator import Pipeline, StageSpec
from sbpy.bql.spark.tick_interval import tick_interval_ms
from sbpy.bql.spark.state_function import _timeout_ms, state_function
from sbpy.bql.spark.testing import StubGroupState

UTC = dt.timezone.utc
T = dt.datetime(2024, 1, 1, tzinfo=UTC)
PERIODIC_COUNT = "SELECT RSTREAM k, count(*) AS c FROM src GROUP BY k EMIT PERIODIC 1 SECONDS"


def at(seconds: float) -> dt.datetime:
    return T + dt.timedelta(seconds=seconds)


def _rows(items, start=1):
    return [(start + i, name, (start + i) * 1000, None if d is None else jf.encode_data(d), d is None)
            for i, (name, d) in enumerate(items)]


class Ticker:
    """A stand-in with a timer: due every second from ``at(1)``; a tick emits the tuples it received
    since the previous tick (``{"node", "got", "at"}``). ``log`` records every call."""

    period = dt.timedelta(seconds=1)

    def __init__(self, spec, first=1.0, fail=False, stop_after=None):
        self.inputs, self.node = tuple(spec.inputs), spec.node
        self.due = at(first)
        self.got: list = []
        self.log: list = []
        self.fail = fail
        self.stop_after = stop_after
        self.ticks = 0

    def process(self, tup):
        self.log.append(("process", tup.data))
        self.got.append(tup.data)
        return StepResult()

    def finish(self, name):
        return StepResult()

    def next_tick(self):
        return self.due

    def tick_period(self):
        return self.period

    def tick(self, now):
        self.log.append(("tick", now))
        if self.fail:
            raise RuntimeError("tick exploded")
        while self.due <= now:
            self.due += self.period
        self.ticks += 1
        out = Tuple({"node": self.node, "got": self.got, "at": now.isoformat()}, now, 0, self.node)
        self.got = []
        return StepResult([out], done=self.stop_after is not None and self.ticks >= self.stop_after)

    def snapshot(self):
        return pickle.dumps((self.due, self.got, self.ticks))

    def restore(self, data):
        self.due, self.got, self.ticks = pickle.loads(data)


class Plain:
    """A stage without timers (no ``next_tick``): echoes tuples; a tick would be recorded."""

    def __init__(self, spec):
        self.inputs, self.node = tuple(spec.inputs), spec.node
        self.log: list = []

    def process(self, tup):
        self.log.append("process")
        return StepResult([Tuple({"echo": tup.data}, tup.ts, tup.seq, self.node)])

    def finish(self, name):
        return StepResult()

    def tick(self, now):
        self.log.append("tick")
        return StepResult()

    def snapshot(self):
        return b""

    def restore(self, data):
        pass


def _outs(rows):
    return [(r[1], jf.decode_data(r[5])) for r in rows if r[0] == "out"]


def test_tick_runs_due_stages_in_order_and_delivers_downstream():
    p = Pipeline([StageSpec("s1", "", ("a",), factory=Ticker),
                  StageSpec("s2", "", ("s1",), factory=lambda s: Ticker(s, first=1.5))])
    p.run(_rows([("a", {"x": 1})]))
    assert p.next_tick() == at(1)
    assert p.tick(at(0.5)) == []  # nothing due: no rows at all, not even stat rows
    out = p.tick(at(1.2))  # s1 due; s2 (due 1.5) is not
    s1, s2 = p.processors
    assert _outs(out) == []  # s1's tick output went into s2, which only collects
    assert s2.log == [("process", {"node": "s1", "got": [{"x": 1}], "at": at(1.2).isoformat()})]
    assert p.next_tick() == at(1.5)
    p.run(_rows([("a", {"x": 2})], start=2))
    out = p.tick(at(2.0))  # both due: s1 ticks first, its output reaches s2 before s2's tick
    assert [kind for kind, _ in s2.log] == ["process", "process", "tick"]
    (node, data), = _outs(out)
    assert node == "s2" and [g["got"] for g in data["got"]] == [[{"x": 1}], [{"x": 2}]]
    stats = {r[1]: jf.decode_data(r[5]) for r in out if r[0] == "stat"}
    assert stats == {"s1": {"received": {}, "sent": 1, "dropped": 0},
                     "s2": {"received": {"s1": 1}, "sent": 1, "dropped": 0}}
    assert [r[3] for r in out] == list(range(len(out)))
    assert all(r[2] == 2 for r in out)  # rows carry the last journal seq seen


def test_stages_without_timers_are_never_ticked():
    p = Pipeline([StageSpec("s1", "", ("a",), factory=Plain), StageSpec("s2", "", ("s1",), factory=Plain)])
    p.run(_rows([("a", {"x": 1})]))
    assert p.next_tick() is None
    assert p.tick(at(100)) == []
    assert [proc.log for proc in p.processors] == [["process"], ["process"]]


def test_a_tick_output_flows_through_stages_without_timers():
    p = Pipeline([StageSpec("s1", "", ("a",), factory=Ticker), StageSpec("s2", "", ("s1",), factory=Plain)])
    p.run(_rows([("a", {"x": 1})]))
    out = p.tick(at(1))
    assert _outs(out) == [("s2", {"echo": {"node": "s1", "got": [{"x": 1}], "at": at(1).isoformat()}})]
    assert p.processors[1].log == ["process"]


def test_failing_tick_is_a_dropped_row_and_done_ends_the_stage():
    p = Pipeline([StageSpec("s1", "", ("a",), factory=lambda s: Ticker(s, fail=True))])
    out = p.tick(at(1))
    dropped = [r for r in out if r[0] == "dropped"]
    assert len(dropped) == 1 and "tick exploded" in dropped[0][6] and dropped[0][1] == "s1"

    p = Pipeline([StageSpec("s1", "", ("a",), factory=lambda s: Ticker(s, stop_after=1)),
                  StageSpec("s2", "", ("s1",), factory=Plain)])
    out = p.tick(at(1))
    assert [(r[0], r[1]) for r in out if r[0] != "stat"] == [("out", "s2"), ("end", "s1"), ("end", "s2")]
    assert p.next_tick() is None  # ended stages want no ticks
    assert p.tick(at(5)) == []


def test_bql_periodic_stage_ticks_and_replays_identically():
    stages = [StageSpec("s", PERIODIC_COUNT, ("src",)),
              StageSpec("t", "SELECT RSTREAM k, c * 10 AS d FROM s [RANGE 1 TUPLES]", ("s",))]
    p = Pipeline(stages)
    assert p.next_tick() is None  # nothing to emit yet
    out = p.run(_rows([("src", {"k": "a"}), ("src", {"k": "b"}), ("src", {"k": "a"})]))
    assert _outs(out) == []  # PERIODIC emits only on ticks
    assert p.next_tick() is not None and p.next_tick() <= at(0)  # never ticked: due at once
    snap = p.snapshot()
    first = p.tick(at(10.3))
    assert _outs(first) == [("t", {"k": "a", "d": 20}), ("t", {"k": "b", "d": 10})]
    assert [r[4] for r in first if r[0] == "out"] == [jf.ts_to_us(at(10.3))] * 2  # ts = the tick time
    assert p.next_tick() is None  # nothing changed since
    p.run(_rows([("src", {"k": "b"})], start=4))
    assert p.next_tick() == at(11)  # the next period boundary
    assert p.tick(at(10.9)) == []
    assert _outs(p.tick(at(11.05))) == [("t", {"k": "b", "d": 20})]
    replay = Pipeline(stages)  # a replayed batch: same state, same processing time → same rows
    replay.restore(snap)
    replay._seq = 3
    assert replay.tick(at(10.3)) == first


def test_bql_periodic_repeat_keeps_ticking():
    q = "SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 500 MILLISECONDS REPEAT"
    p = Pipeline([StageSpec("s", q, ("src",))])
    p.run(_rows([("src", {"x": 1})]))
    assert _outs(p.tick(at(0.1))) == [("s", {"c": 1})]
    assert p.next_tick() == at(0.5)
    assert _outs(p.tick(at(0.5))) == [("s", {"c": 1})]
    assert p.next_tick() == at(1.0)


# ---------------------------------------------------------------- state_function with a stand-in GroupState


def _frame(items, start=1):
    pd = pytest.importorskip("pandas")
    rows = _rows(items, start)
    return pd.DataFrame({"seq": [r[0] for r in rows], "input": [r[1] for r in rows], "ts": [r[2] for r in rows],
                         "data": [r[3] for r in rows], "end": [r[4] for r in rows]})


def _call(fn, frames, state):
    (pdf,) = list(fn(0, iter(frames), state))
    return pdf.to_dict("records")


def test_state_function_ticks_after_the_batch_and_sets_the_timeout():
    fn = state_function("q.ticks", [StageSpec("s", PERIODIC_COUNT, ("src",))], ticks=True)
    t0 = jf.ts_to_us(at(20.25)) // 1000
    state = StubGroupState(t0)
    rows = _call(fn, [_frame([("src", {"k": "a"}), ("src", {"k": "a"})])], state)
    assert [(r["kind"], r["idx"]) for r in rows] == [("stat", 0), ("out", 1), ("stat", 2)]
    assert jf.decode_data(rows[1]["data"]) == {"k": "a", "c": 2}  # the first tick is due at once
    assert state.timeout_ms is None  # nothing changed since that tick: no wake-up wanted
    state = StubGroupState(t0 + 100, state.value)
    _call(fn, [_frame([("src", {"k": "b"})], start=3)], state)
    assert state.timeout_ms == jf.ts_to_us(at(21)) // 1000 - 1 - (t0 + 100)  # fires at the boundary 21 s
    state = StubGroupState(jf.ts_to_us(at(21)) // 1000 + 3, state.value, timed_out=True)
    rows = _call(fn, [], state)
    assert [(r["kind"], jf.decode_data(r["data"])) for r in rows if r["kind"] == "out"] == [
        ("out", {"k": "b", "c": 1})]


def test_state_function_without_ticks_never_touches_the_timeout():
    fn = state_function("q.noticks", [StageSpec("s", PERIODIC_COUNT, ("src",))])
    state = StubGroupState(jf.ts_to_us(at(5)) // 1000)
    rows = _call(fn, [_frame([("src", {"k": "a"})])], state)
    assert [r["kind"] for r in rows] == ["stat"] and state.timeout_ms is None


def test_timeout_fires_in_the_first_batch_at_or_after_the_deadline():
    now_ms = 1_000_000
    due = jf.us_to_ts((now_ms + 400) * 1000 + 1)  # 400.001 ms ahead
    timeout = _timeout_ms(due, now_ms)
    # Spark times out when now_ms + timeout < batch time: the batch at ms 401 (>= due) fires, 400 does not
    assert now_ms + timeout < now_ms + 401 and not now_ms + timeout < now_ms + 400
    assert _timeout_ms(jf.us_to_ts(0), now_ms) == 1  # overdue: the next batch


@pytest.mark.parametrize("periods, expected", [
    ((), 0), (("500 MILLISECONDS",), 500), (("2 SECONDS",), 1000), (("1500 MILLISECONDS",), 500),
    (("300 MILLISECONDS", "700 MILLISECONDS"), 100), (("7 MILLISECONDS",), 100), (("1001 MILLISECONDS",), 1000),
])
def test_tick_interval_from_the_stages(periods, expected):
    stages = [StageSpec("plain", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES]", ("src",))]
    stages += [StageSpec(f"p{i}", f"SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC {p}", ("src",))
               for i, p in enumerate(periods)]
    assert tick_interval_ms(stages) == expected


def test_tick_interval_ignores_non_aggregating_periodic_and_union_takes_the_shortest():
    tail = "SELECT RSTREAM * FROM src EMIT PERIODIC 1 SECONDS"  # a streaming tail emits at once
    union = ("SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 2 SECONDS UNION ALL "
             "SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 400 MILLISECONDS")
    assert tick_interval_ms([StageSpec("s", tail, ("src",))]) == 0
    assert tick_interval_ms([StageSpec("s", union, ("src",))]) == 400
