"""WAIT backpressure on Spark: a source that emits as fast as it reads its file (``rewindable``: one
tuple at a time) outruns a Spark query; at every journal commit the query's backlog (the source's tuples
after its newest planned batch, from its checkpoint's offset log) is at most ``BUFFER SIZE``, and every
output arrives exactly once."""
from __future__ import annotations

import time

import pytest

from sbpy.bql.spark.checkpoint_positions import planned_after
from sbpy.server.journal import JournalWriter
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from e2e_util import lines, run, write

pytestmark = pytest.mark.spark

N = 4000
BUFFER = 200


def test_a_fast_source_is_held_by_a_spark_query(server_context, tmp_path, monkeypatch):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write(src, [{"a": i} for i in range(N)])
    t = Topology("bp", server_context)
    seen = {"max": 0, "commits": 0}
    append = JournalWriter.append

    def measured(self, node, items, batch=None):
        seq = append(self, node, items, batch)
        consumer = t.consumers.get("k")
        pos = planned_after(consumer.checkpoint_dir) if consumer is not None else None
        if node == "s" and pos is not None:
            seen["max"] = max(seen["max"], self.backlog("s", pos))
            seen["commits"] += 1
        return seq

    monkeypatch.setattr(JournalWriter, "append", measured)
    try:
        t0 = time.monotonic()
        run(t, f"""
            CREATE PAUSED SOURCE s TYPE file WITH path = "{src}", rewindable = true;
            CREATE STREAM x AS SELECT RSTREAM a FROM s [RANGE 1 TUPLES, BUFFER SIZE {BUFFER}, WAIT IF FULL];
            CREATE SINK k TYPE file WITH path = "{out}";
            INSERT INTO k FROM x;
            RESUME SOURCE s;""")
        assert wait_until(lambda: out.exists() and out.read_bytes().count(b"\n") >= N, 600, 0.1)
        print(f"{N} tuples through BUFFER SIZE {BUFFER}: {time.monotonic() - t0:.1f} s, {seen['commits']} commits, "
              f"largest backlog {seen['max']}")
    finally:
        t.stop()
    assert seen["commits"] > N // 256
    assert seen["max"] <= BUFFER
    assert lines(out) == [{"a": i} for i in range(N)]
    assert t.sources["s"].counters.num_dropped == 0
