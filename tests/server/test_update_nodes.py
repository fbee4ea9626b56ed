"""UPDATE SOURCE / UPDATE SINK name SET k = v (SensorBee's ``Updater``) on a running topology (the
in-process query runner, no Spark): the plugin's ``update`` hook, the built-in file source's
``interval``, and the errors for unknown nodes, instances without the hook and refused values."""
from __future__ import annotations

import json
import time

import pytest

from sbpy.bql.errors import BQLError
from sbpy.bql.parser import parse_script
from sbpy.plugins.builtin.sources import after_turn, wait_turn
from sbpy.plugins.loader import load_modules
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology
from sbpy.server.uds_storage import InMemoryStorage

from local_runner import start_local

load_modules(["faulty_plugin"])
from faulty_plugin import FailingSink  # noqa: E402 - registered by load_modules above


class Ctx:
    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.uds_storage = InMemoryStorage()


@pytest.fixture
def topo(tmp_path):
    t = Topology("upd", Ctx(tmp_path / "data"), query_starter=start_local)
    yield t
    t.stop()


def run(t, script):
    return [t.execute(p) for p in parse_script(script)]


def error_of(t, stmt):
    with pytest.raises(BQLError) as e:
        run(t, stmt)
    return e.value.message


def paced_pipeline(t, tmp_path, sink_name, interval='"1h"'):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(6)))
    run(t, f"""
        CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = {interval};
        CREATE STREAM s AS SELECT RSTREAM * FROM src [RANGE 1 TUPLES];
        CREATE SINK k TYPE faulty_sink WITH name = "{sink_name}";
        INSERT INTO k FROM s;
        RESUME SOURCE src;""")


def test_updates_reach_a_running_source_and_sink(topo, tmp_path):
    paced_pipeline(topo, tmp_path, "upd1")
    assert wait_until(lambda: len(FailingSink.ROWS["upd1"]) == 1, 30)  # the next one is due in an hour
    run(topo, 'UPDATE SINK k SET tag = "b";')
    run(topo, 'UPDATE SOURCE src SET interval = "1ms";')  # the waiting source picks it up at once
    assert wait_until(lambda: len(FailingSink.ROWS["upd1"]) == 6, 30)
    assert FailingSink.ROWS["upd1"] == [{"i": 0}] + [{"i": i, "tag": "b"} for i in range(1, 6)]


def test_refused_updates_change_nothing(topo, tmp_path):
    paced_pipeline(topo, tmp_path, "upd2")
    out = tmp_path / "out.jsonl"
    run(topo, f'CREATE SINK f TYPE file WITH path = "{out}";')
    assert error_of(topo, "UPDATE SOURCE nope SET interval = 1;") == "source 'nope' was not found"
    assert error_of(topo, "UPDATE SINK nope SET tag = 1;") == "sink 'nope' was not found"
    assert error_of(topo, "UPDATE SINK f SET path = 1;") == "sink 'f' cannot be updated"
    assert error_of(topo, 'UPDATE SINK k SET fail_on = "x";') == "cannot update sink 'k': fail_on must be an integer"
    assert error_of(topo, "UPDATE SOURCE src SET path = 1;") == (
        "cannot update source 'src': parameter 'path' cannot be updated (only interval can)")
    assert error_of(topo, "UPDATE SOURCE src SET interval = 0;").startswith(
        "cannot update source 'src': interval can only be changed between positive durations")
    sink = topo.sinks["k"].impl
    assert (topo.sources["src"].impl.interval, sink.fail_on, sink.tag) == (3600.0, -1, None)


def test_a_source_read_in_segments_cannot_be_paced(topo, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"i": 1}\n')
    run(topo, f'CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";')
    assert "read in segments" in error_of(topo, "UPDATE SOURCE src SET interval = 1;")


def test_status_sources_take_a_new_interval(topo):
    run(topo, 'CREATE SOURCE st TYPE node_statuses WITH interval = "1h";')
    run(topo, 'UPDATE SOURCE st SET interval = "2s";')
    assert topo.sources["st"].impl.interval == 2.0
    assert "interval must be positive" in error_of(topo, "UPDATE SOURCE st SET interval = 0;")


def test_a_refused_update_is_logged_while_statements_are_replayed(topo, tmp_path, caplog):
    paced_pipeline(topo, tmp_path, "upd3")
    topo.recovering = True
    run(topo, "UPDATE SOURCE src SET path = 1;")  # a restart must not stop at it
    topo.recovering = False
    assert "replaying 'UPDATE SOURCE src SET path = 1' failed" in caplog.text


class _Clock:
    """A source context whose ``sleep`` advances a fake clock (and may change the interval)."""

    def __init__(self, monkeypatch, on_sleep=None):
        self.now, self.slept, self.on_sleep = 1000.0, [], on_sleep
        monkeypatch.setattr(time, "time", lambda: self.now)

    def sleep(self, seconds):
        self.slept.append(round(seconds, 6))
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self)
        return True


def test_wait_turn_rereads_the_interval_while_it_waits(monkeypatch):
    interval = [3600.0]
    clock = _Clock(monkeypatch, on_sleep=lambda c: interval.__setitem__(0, 0.5) if len(c.slept) == 2 else None)
    first = wait_turn(clock, None, lambda: interval[0])
    assert first == 1000.0 and clock.slept == []  # the first tuple is due at once
    second = wait_turn(clock, after_turn(first, interval[0]), lambda: interval[0])
    assert clock.slept == [0.2, 0.2, 0.1] and second == 1000.5  # re-read after each short sleep


def test_a_late_source_catches_up_by_one_interval(monkeypatch):
    clock = _Clock(monkeypatch)
    clock.now = 1010.0  # 10 s late for a tuple due at 1000 with a 1 s interval
    assert wait_turn(clock, after_turn(1000.0, 1.0), lambda: 1.0) == 1009.0 and clock.slept == []
