"""A stream's BUFFER SIZE in node status, and tuples its full DROP OLDEST buffer drops: counted in the
sender's ``output_stats.num_dropped``, reported on ``dropped_tuples``, never lost silently (Spark-free)."""
from __future__ import annotations

import json

import pytest

from sbpy.bql.parser import parse_script
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local
from topology_util import Ctx

N = 200


@pytest.fixture
def topo(tmp_path):
    t = Topology("t1", Ctx(tmp_path / "data"), query_starter=start_local)
    yield t
    t.stop()


def test_buffer_size_drops_are_counted_and_reported(topo, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(N)))
    for p in parse_script(f"""
            CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
            CREATE SOURCE d TYPE dropped_tuples;
            CREATE STREAM x AS SELECT RSTREAM a FROM s [RANGE 1 TUPLES, BUFFER SIZE 2, DROP OLDEST IF FULL];
            CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
            CREATE SINK kd TYPE file WITH path = "{tmp_path}/drops.jsonl";
            INSERT INTO k FROM x;
            INSERT INTO kd FROM d;
            RESUME SOURCE s;"""):
        topo.execute(p)
    assert wait_until(lambda: topo.node("stream", "x")["state"] == "stopped", 20)
    x = topo.node("stream", "x")["status"]["input_stats"]["inputs"]["s"]
    assert x["queue_size"] == 2
    dropped = topo.node("source", "s")["status"]["output_stats"]["num_dropped"]
    assert x["num_received"] + dropped == N
    assert wait_until(lambda: topo.node("sink", "kd")["status"]["input_stats"]["num_received_total"] == dropped, 10)
    topo.stop()
    drops = [json.loads(line) for line in (tmp_path / "drops.jsonl").read_text().splitlines()] if dropped else []
    assert all(d["node_name"] == "s" and d["event_type"] == "output" and "error" not in d for d in drops)
    outs = [json.loads(line)["a"] for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert sorted(outs + [d["data"]["a"] for d in drops]) == list(range(N))  # each tuple either way, once


def test_default_queue_size_is_sensorbee_s(topo):
    for p in parse_script("CREATE PAUSED SOURCE s TYPE file WITH path = \"/nonexistent\";"
                          "CREATE STREAM x AS SELECT RSTREAM * FROM s [RANGE 1 TUPLES];"):
        topo.execute(p)
    assert topo.node("stream", "x")["status"]["input_stats"]["inputs"]["s"]["queue_size"] == 1024
