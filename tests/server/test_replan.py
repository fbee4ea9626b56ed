"""A stream fused into a running query gains a second consumer: it is split out with its state and
computed once; both consumers see the same tuples (Spark-free, with the in-process query runner)."""
from __future__ import annotations

import json

import pytest

from sbpy.bql.runtime.testing import run_query
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local
from topology_util import Ctx, lines, run

N = 120
QUERY = "SELECT RSTREAM count(*) AS n, max(a) AS last, sum(a) AS s FROM src [RANGE 5 TUPLES]"


@pytest.fixture
def topo(tmp_path):
    t = Topology("t1", Ctx(tmp_path / "data"), query_starter=start_local)
    yield t
    t.stop()


def test_late_second_consumer_splits_the_stream_out(topo, tmp_path):
    rows = [{"a": i} for i in range(N)]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"src": rows})
    k1, k2 = tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    run(topo, f"""
        CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = 0.01;
        CREATE STREAM x AS {QUERY};
        CREATE STREAM y AS SELECT RSTREAM n, last FROM x [RANGE 1 TUPLES] WHERE last % 2 = 0;
        CREATE SINK k1 TYPE file WITH path = "{k1}";
        INSERT INTO k1 FROM y;
        RESUME SOURCE src;""")
    assert wait_until(lambda: len(lines(k1)) >= 5, 20)
    (owner,) = topo.consumers.values()
    assert owner.stage_names == ["x", "y"]
    owner_key = owner.query_key
    run(topo, f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM x;')
    assert "x" in topo.materialized
    assert topo.consumers["x"].stage_names == ["x"] and topo.consumers["k1"].stage_names == ["y"]
    assert wait_until(lambda: topo.node("stream", "y")["state"] == "stopped", 30)
    assert wait_until(lambda: len(lines(k2)) > 0 and lines(k2)[-1] == expected[-1], 10)
    # k1 continued through the split as if nothing happened: windows kept their state
    assert lines(k1) == [{"n": e["n"], "last": e["last"]} for e in expected if e["last"] % 2 == 0]
    # k2 sees x's current output from its attach on: the very tuples x computed once
    got2 = lines(k2)
    assert got2 == expected[len(expected) - len(got2):]
    assert topo.node("stream", "x")["status"]["input_stats"]["inputs"]["src"]["num_received"] == N
    assert topo.consumers["k1"].query_key != owner_key  # a new chain: a fresh checkpoint


def test_replayed_topology_plans_with_the_final_graph(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(3)))
    t = Topology("t2", Ctx(tmp_path / "data"), query_starter=start_local)
    try:
        t.recovering, t.defer_consumers = True, True
        run(t, f"""
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";
            CREATE STREAM x AS SELECT RSTREAM a FROM src [RANGE 1 TUPLES];
            CREATE SINK k1 TYPE file WITH path = "{tmp_path}/k1.jsonl";
            INSERT INTO k1 FROM x;
            CREATE SINK k2 TYPE file WITH path = "{tmp_path}/k2.jsonl";
            INSERT INTO k2 FROM x;
            CREATE SINK k3 TYPE file WITH path = "{tmp_path}/k3.jsonl";
            INSERT INTO k3 FROM src;
            DROP SINK k3;""")
        assert all(c.handle is None for c in t.consumers.values())  # nothing started during the replay
        t.start_deferred()
        t.recovering = False
        assert sorted(t.consumers) == ["k1", "k2", "x"]  # x computed once from the start; k3 was dropped
        assert t.consumers["k1"].stage_names == [] and t.consumers["k1"].chain.inputs == ["x"]
        run(t, "RESUME SOURCE src;")
        assert wait_until(lambda: len(lines(tmp_path / "k1.jsonl")) == len(lines(tmp_path / "k2.jsonl")) == 3, 10)
        assert lines(tmp_path / "k1.jsonl") == lines(tmp_path / "k2.jsonl") == [{"a": 0}, {"a": 1}, {"a": 2}]
    finally:
        t.stop()


def test_driver_mode_owner_is_split_too(tmp_path):
    """A stream calling a UDS-backed function (its query runs on the driver) gains a consumer: the counter
    is still called once per tuple, and both consumers see the same ids."""
    from sbpy.plugins.loader import load_modules
    from sbpy.server.uds_storage import InMemoryStorage

    load_modules(["sbpy.plugins.examples"])
    ctx = Ctx(tmp_path / "data", InMemoryStorage())
    t = Topology("t3", ctx, query_starter=start_local)
    src, k1, k2 = tmp_path / "in.jsonl", tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(N)))
    try:
        run(t, f"""
            CREATE STATE c TYPE my_counter WITH start = 1;
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = 0.01;
            CREATE STREAM ids AS SELECT RSTREAM my_next_count("c") AS id, a FROM src [RANGE 1 TUPLES];
            CREATE SINK k1 TYPE file WITH path = "{k1}";
            INSERT INTO k1 FROM ids;
            RESUME SOURCE src;""")
        assert wait_until(lambda: len(lines(k1)) >= 5, 20)
        assert t.consumers["k1"].on_driver
        run(t, f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM ids;')
        assert t.consumers["ids"].stage_names == ["ids"] and t.consumers["ids"].on_driver
        assert wait_until(lambda: t.node("stream", "ids")["state"] == "stopped", 30)
        done = wait_until(lambda: len(lines(k1)) == N and lines(k2)[-1:] == lines(k1)[-1:], 10)
        assert done, (len(lines(k1)), lines(k1)[-2:], lines(k2)[-2:],
                      {c.id: (c.error, c.done, c.stopped, c.handle and c.handle.error) for c in t.consumers.values()})
    finally:
        t.stop()
    got1, got2 = lines(k1), lines(k2)
    assert got1 == [{"id": i + 1, "a": i} for i in range(N)]  # one counter call per tuple, in order
    assert got2 and got2 == got1[N - len(got2):]
