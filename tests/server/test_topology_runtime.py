"""Topology runtime with the in-process stand-in query runner (no Spark)."""
from __future__ import annotations

import time

import pytest

from sbpy.bql.errors import BQLError
from sbpy.bql.parser import parse_script
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local
from topology_util import Ctx, lines, run, write


@pytest.fixture
def topo(tmp_path):
    t = Topology("t1", Ctx(tmp_path / "data"), query_starter=start_local)
    yield t
    t.stop()


def test_file_to_sink_through_stream(topo, tmp_path):
    src = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    write(src, [{"a": i} for i in range(5)])
    run(topo, f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE STREAM x AS SELECT RSTREAM a * 2 AS b FROM s [RANGE 1 TUPLES] WHERE a != 3;
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM x;
        RESUME SOURCE s;""")
    assert wait_until(lambda: topo.node("stream", "x")["state"] == "stopped", 10)
    x = topo.node("stream", "x")["status"]
    k = topo.node("sink", "k")
    assert x["input_stats"]["inputs"]["s"]["num_received"] == 5
    assert x["output_stats"]["num_sent_total"] == 4
    assert k["state"] == "running"
    assert k["status"]["input_stats"]["num_received_total"] == 4
    assert topo.node("source", "s")["state"] == "stopped"
    topo.stop()
    assert lines(out) == [{"b": 0}, {"b": 2}, {"b": 4}, {"b": 8}]


def test_errors_before_any_work(topo, tmp_path):
    run(topo, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/none.jsonl";')
    cases = {
        "CREATE PAUSED SOURCE S TYPE file WITH path = \"x\";": "source 's' already exists",
        "CREATE STREAM y AS SELECT RSTREAM * FROM nope [RANGE 1 TUPLES];": "stream 'nope' was not found",
        "INSERT INTO nope FROM s;": "sink 'nope' was not found",
        "CREATE SOURCE z TYPE nosuch;": "source type 'nosuch' is not registered",
        "CREATE SOURCE z TYPE file WITH path = \"a\", repeat = 1.5;": "repeat must be a integer",
        "REWIND SOURCE s;": "source 's' is not rewindable",
        "DROP STREAM q;": "stream 'q' was not found",
    }
    for stmt, msg in cases.items():
        t0 = time.monotonic()
        with pytest.raises(BQLError) as e:
            run(topo, stmt)
        assert msg in str(e.value), stmt
        assert time.monotonic() - t0 < 1


def test_stepwise_rewind_and_drop(topo, tmp_path):
    f1, f2, out = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "out.jsonl"
    write(f1, [{"v": 1}])
    write(f2, [{"w": 10}])
    run(topo, f"""
        CREATE PAUSED SOURCE a TYPE file WITH path = "{f1}", rewindable = true;
        CREATE PAUSED SOURCE b TYPE file WITH path = "{f2}", rewindable = true;
        CREATE STREAM sbcheck_out AS SELECT RSTREAM * FROM a [RANGE 1 TUPLES] UNION ALL
            SELECT RSTREAM * FROM b [RANGE 1 TUPLES];
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM sbcheck_out;""")
    def idle(name, n):
        s = topo.node("source", name)["status"]
        return s["output_stats"]["num_sent_total"] >= n and s["source"]["waiting_for_rewind"]
    run(topo, "RESUME SOURCE a;")
    assert wait_until(lambda: idle("a", 1), 5)
    run(topo, "RESUME SOURCE b;")
    assert wait_until(lambda: idle("b", 1), 5)
    write(f1, [{"v": 2}])
    run(topo, "REWIND SOURCE a;")
    assert wait_until(lambda: idle("a", 2), 5)
    run(topo, "DROP SOURCE a; DROP SOURCE b;")
    assert wait_until(lambda: topo.node("stream", "sbcheck_out")["state"] == "stopped", 10)
    topo.stop()
    assert lines(out) == [{"v": 1}, {"w": 10}, {"v": 2}]


def test_adhoc_select_cursor(topo, tmp_path):
    src = tmp_path / "in.jsonl"
    write(src, [{"a": i} for i in range(3)])
    run(topo, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";')
    (p,) = parse_script("SELECT RSTREAM a FROM s [RANGE 1 TUPLES]")
    cur = topo.select(p)
    run(topo, "RESUME SOURCE s;")
    assert list(cur) == [{"a": 0}, {"a": 1}, {"a": 2}]
    cur.close()


def test_select_close_stops_query(topo, tmp_path):
    src = tmp_path / "in.jsonl"
    write(src, [{"a": 1}])
    run(topo, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{src}", rewindable = true;')
    (p,) = parse_script("SELECT RSTREAM a FROM s [RANGE 1 TUPLES]")
    cur = topo.select(p)
    run(topo, "RESUME SOURCE s;")
    assert cur.get(timeout=5) == {"a": 1}
    cur.close()
    assert wait_until(lambda: not topo.consumers, 5)


def test_dropped_tuples_source_and_counts(topo, tmp_path):
    src = tmp_path / "in.jsonl"
    write(src, [{"a": 1}, {"a": "x"}, {"a": 2}])
    run(topo, f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE SOURCE d TYPE dropped_tuples;
        CREATE STREAM x AS SELECT RSTREAM a + 1 AS b FROM s [RANGE 1 TUPLES];
        CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
        CREATE SINK kd TYPE file WITH path = "{tmp_path}/drops.jsonl";
        INSERT INTO k FROM x;
        INSERT INTO kd FROM d;
        RESUME SOURCE s;""")
    assert wait_until(lambda: topo.node("stream", "x")["state"] == "stopped", 10)
    assert wait_until(lambda: topo.node("sink", "kd")["status"]["input_stats"]["num_received_total"] == 1, 5)
    topo.stop()
    (d,) = lines(tmp_path / "drops.jsonl")
    assert d["node_name"] == "x" and d["node_type"] == "box" and d["data"] == {"a": "x"} and d["error"]
    assert lines(tmp_path / "out.jsonl") == [{"b": 2}, {"b": 3}]
