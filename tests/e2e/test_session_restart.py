"""The Spark session dies under a running topology: it is re-created and the topology's queries
re-attach from their checkpoints; the sink still gets every output exactly once."""
from __future__ import annotations

import json

import pytest

from sbpy.bql.parser import parse_script
from sbpy.bql.runtime.testing import run_query
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from e2e_util import lines

pytestmark = pytest.mark.spark

QUERY = "SELECT RSTREAM count(*) AS n, max(a) AS last FROM s [RANGE 5 TUPLES]"


def test_session_dies_and_topology_reattaches(server_context, tmp_path):
    rows = [{"a": i} for i in range(150)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"s": rows})
    t = Topology("sess", server_context)
    try:
        for p in parse_script(f"""
                CREATE PAUSED SOURCE s TYPE file WITH path = "{src}", interval = 0.03;
                CREATE STREAM x AS {QUERY};
                CREATE SINK k TYPE file WITH path = "{out}";
                INSERT INTO k FROM x;
                RESUME SOURCE s;"""):
            t.execute(p)
        assert wait_until(lambda: len(lines(out)) >= 1, 180, 0.05)
        old = server_context.spark()
        old.stop()  # the session dies (as when the driver's SparkContext shuts down)
        assert wait_until(lambda: t.node("stream", "x")["state"] == "stopped", 300, 0.1)
        assert server_context.spark() is not old
    finally:
        t.stop()
    assert lines(out) == expected
