"""The topology runtime on Spark: file source → fused stream → file sink, ad-hoc SELECT, restart."""
from __future__ import annotations

import pytest

from sbpy.bql.parser import parse_script
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from e2e_util import lines, run, write

pytestmark = pytest.mark.spark


def test_file_stream_sink_on_spark(server_context, tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write(src, [{"a": i} for i in range(6)])
    t = Topology("e2e1", server_context)
    try:
        run(t, f"""
            CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
            CREATE STREAM x AS SELECT ISTREAM a, a % 2 AS odd FROM s [RANGE 2 TUPLES] WHERE a > 0;
            CREATE STREAM y AS SELECT RSTREAM a FROM x [RANGE 1 TUPLES] WHERE odd = 1;
            CREATE SINK k TYPE file WITH path = "{out}";
            INSERT INTO k FROM y;
            RESUME SOURCE s;""")
        assert wait_until(lambda: t.node("stream", "y")["state"] == "stopped", 120, 0.05)
        y = t.node("stream", "y")["status"]
        k = t.node("sink", "k")["status"]
        assert k["input_stats"]["num_received_total"] == y["output_stats"]["num_sent_total"] == 3
        assert t.node("stream", "x")["status"]["input_stats"]["inputs"]["s"]["num_received"] == 6
    finally:
        t.stop()
    assert lines(out) == [{"a": 1}, {"a": 3}, {"a": 5}]


def test_adhoc_select_on_spark(server_context, tmp_path):
    src = tmp_path / "in.jsonl"
    write(src, [{"a": i} for i in range(3)])
    t = Topology("e2e2", server_context)
    try:
        run(t, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";')
        (p,) = parse_script("SELECT RSTREAM a * 10 AS b FROM s [RANGE 1 TUPLES]")
        cur = t.select(p)
        run(t, "RESUME SOURCE s;")
        got = list(cur)
        cur.close()
    finally:
        t.stop()
    assert got == [{"b": 0}, {"b": 10}, {"b": 20}]
