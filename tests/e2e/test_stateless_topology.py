"""A memoryless stream through a topology on Spark: planned stateless (every partition, the sink's JSON
lines encoded on the executors), its file sink holds byte for byte what the sequential execution
writes for the same input, and its errors drop only their tuples. A query on the driver hands its
sink JSON lines too (its pipeline encodes them; no tagged JSON decoded back): the same bytes."""
from __future__ import annotations

import json

import pytest

from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from e2e_util import run

pytestmark = pytest.mark.spark

N = 25_000
QUERY = ("SELECT RSTREAM id, price * 2 AS p2, \"2020-01-02T03:04:05.5Z\"::timestamp AS t, price::string AS s, "
         "tags[0] AS first FROM src [RANGE 1 TUPLES] WHERE price < 8")


def _input(path):
    rows = []
    for i in range(N):
        row = {"id": i, "price": (i % 10) + (0.5 if i % 3 else 0), "tags": [i % 7, "x"]}
        if i % 997 == 0:
            row["price"] = "oops"  # price < 8 fails: the step is dropped alone
        if i % 1009 == 0:
            del row["tags"]  # tags[0] is missing: dropped alone
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n")


def _run(server_context, tmp_path, name, src, monkeypatch, force=None, query=QUERY):
    if force:
        monkeypatch.setenv("SBPY_FORCE_EXECUTION", force)
    else:
        monkeypatch.delenv("SBPY_FORCE_EXECUTION", raising=False)
    out = tmp_path / f"{name}.jsonl"
    t = Topology(name, server_context)
    drops = []
    t.subscribe_dropped(drops.append)
    try:
        run(t, f"""
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";
            CREATE STREAM x AS {query};
            CREATE SINK k TYPE file WITH path = "{out}";
            INSERT INTO k FROM x;""")
        consumer = t.consumers["k"]
        assert wait_until(lambda: consumer.handle is not None and consumer.handle.last_progress is not None,
                          120, 0.05)
        execution, out_format = consumer.plan.execution.value, consumer.out_format
        run(t, "RESUME SOURCE src;")
        assert wait_until(lambda: t.node("stream", "x")["state"] == "stopped", 240, 0.1)
        stats = t.node("stream", "x")["status"]
    finally:
        t.stop()
    return execution, out_format, out.read_bytes(), sorted((d["data"]["id"], d["error"]) for d in drops), stats


def test_stateless_equals_sequential_byte_for_byte(server_context, tmp_path, monkeypatch):
    src = tmp_path / "in.jsonl"
    _input(src)
    fast = _run(server_context, tmp_path, "fast", src, monkeypatch)
    slow = _run(server_context, tmp_path, "slow", src, monkeypatch, force="sequential")
    assert fast[:2] == ("stateless", "json") and slow[:2] == ("sequential", "tagged")
    assert fast[2] == slow[2] and fast[2].count(b"\n") > N // 2
    assert fast[3] == slow[3] and len(fast[3]) > 20
    assert fast[4]["input_stats"] == slow[4]["input_stats"]
    assert fast[4]["output_stats"]["num_sent_total"] == slow[4]["output_stats"]["num_sent_total"]


# ISTREAM over a count window: planned on the driver (small bounded state); its errors drop their steps
WINDOWED = ("SELECT ISTREAM id % 50 AS g, price::string AS s, \"2020-01-02T03:04:05.5Z\"::timestamp AS t, "
            "tags[0] AS first FROM src [RANGE 3 TUPLES] WHERE price < 8")


@pytest.mark.parametrize("query", [WINDOWED, QUERY], ids=["windowed", "memoryless"])
def test_driver_query_writes_the_sequential_lines(server_context, tmp_path, monkeypatch, query):
    src = tmp_path / "in.jsonl"
    _input(src)
    force = None if query is WINDOWED else "driver"
    driver = _run(server_context, tmp_path, "drv", src, monkeypatch, force=force, query=query)
    slow = _run(server_context, tmp_path, "seq", src, monkeypatch, force="sequential", query=query)
    assert driver[:2] == ("driver", "json") and slow[:2] == ("sequential", "tagged")
    assert driver[2] == slow[2] and driver[2].count(b"\n") > N // 10
    assert driver[3] == slow[3] and len(driver[3]) > 20
    assert driver[4]["input_stats"] == slow[4]["input_stats"]
    assert driver[4]["output_stats"]["num_sent_total"] == slow[4]["output_stats"]["num_sent_total"]
