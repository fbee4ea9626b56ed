"""On Spark: a stream fused into a running query gains a second consumer; its state is read from the
stopped query's checkpoint (Spark's state data source) and handed to the two queries that replace it."""
from __future__ import annotations

import pytest
from e2e_util import lines
from gated_source import gate
from sbpy.bql.parser import parse_script
from sbpy.bql.runtime.testing import run_query
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

pytestmark = pytest.mark.spark
FIRST = 20  # rows the source emits before the split; the rest after it (``gated_source``)

N = 100
QUERY = "SELECT RSTREAM count(*) AS n, max(a) AS last, sum(a) AS s FROM src [RANGE 5 TUPLES]"


def test_split_on_spark_keeps_window_state(server_context, tmp_path):
    from sbpy.plugins.loader import load_modules

    load_modules(["gated_source"])
    gate("split").clear()
    rows = [{"a": i} for i in range(N)]
    k1, k2 = tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    expected = run_query(QUERY, {"src": rows})
    t = Topology("split", server_context)
    try:
        for p in parse_script(f"""
                CREATE PAUSED SOURCE src TYPE gated_rows WITH n = {N}, first = {FIRST}, gate = "split";
                CREATE STREAM x AS {QUERY};
                CREATE SINK k1 TYPE file WITH path = "{k1}";
                INSERT INTO k1 FROM x;
                RESUME SOURCE src;"""):
            t.execute(p)
        assert wait_until(lambda: len(lines(k1)) == FIRST, 180, 0.05)
        old_ck = t.consumers["k1"].checkpoint_dir
        for p in parse_script(f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM x;'):
            t.execute(p)
        gate("split").set()
        assert t.consumers["x"].stage_names == ["x"] and t.consumers["k1"].stage_names == []
        assert not old_ck.exists()
        assert wait_until(lambda: t.node("stream", "x")["state"] == "stopped", 240, 0.1)
        done = wait_until(lambda: len(lines(k1)) == N and lines(k2)[-1:] == expected[-1:], 60, 0.1)
        assert done, (len(lines(k1)), lines(k1)[-2:], lines(k2)[-2:],
                      {c.id: (c.error, c.done, c.stopped, c.start_seq, c.chain.inputs,
                              c.handle and c.handle.is_active, c.handle and c.handle.error,
                              c.handle and (c.handle.last_progress or {}).get("sources"))
                       for c in t.consumers.values()},
                      t.journal.head, (t.journal.dir / "x" / "log.jsonl").read_text().splitlines()[-3:])
    finally:
        gate("split").set()
        t.stop()
    assert lines(k1) == expected  # the window state went on through the split
    got2 = lines(k2)
    assert got2 and got2 == expected[N - len(got2):]


def test_split_of_a_driver_mode_query_on_spark(server_context, tmp_path):
    """The owner calls a UDS-backed function, so its query runs on the driver: its last batch's snapshot
    file is handed over; the counter is called once per tuple and both sinks see the same ids."""
    from sbpy.plugins.loader import load_modules
    from sbpy.server.uds_storage import InMemoryStorage

    load_modules(["sbpy.plugins.examples", "gated_source"])
    gate("splitd").clear()
    if getattr(server_context, "uds_storage", None) is None:
        server_context.uds_storage = InMemoryStorage()
    k1, k2 = tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    t = Topology("splitd", server_context)
    try:
        for p in parse_script(f"""
                CREATE STATE c TYPE my_counter WITH start = 1;
                CREATE PAUSED SOURCE src TYPE gated_rows WITH n = {N}, first = {FIRST}, gate = "splitd";
                CREATE STREAM ids AS SELECT RSTREAM my_next_count("c") AS id, a FROM src [RANGE 1 TUPLES];
                CREATE SINK k1 TYPE file WITH path = "{k1}";
                INSERT INTO k1 FROM ids;
                RESUME SOURCE src;"""):
            t.execute(p)
        assert wait_until(lambda: len(lines(k1)) == FIRST, 180, 0.05)
        assert t.consumers["k1"].on_driver
        for p in parse_script(f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM ids;'):
            t.execute(p)
        gate("splitd").set()
        assert wait_until(lambda: t.node("stream", "ids")["state"] == "stopped", 240, 0.1)
        assert wait_until(lambda: len(lines(k1)) == N and lines(k2)[-1:] == lines(k1)[-1:], 60, 0.1)
    finally:
        gate("splitd").set()
        t.stop()
    got1, got2 = lines(k1), lines(k2)
    assert got1 == [{"id": i + 1, "a": i} for i in range(N)]
    assert got2 and got2 == got1[N - len(got2):]
