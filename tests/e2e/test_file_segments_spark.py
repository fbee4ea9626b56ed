"""A ``file`` source journaled in segments through a topology on Spark: the journal is read in two
partitions, yet the stream sees every line once, in file order, and bad lines reach dropped_tuples."""
from __future__ import annotations

import json

import pytest

from sbpy.plugins.builtin import sources
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from e2e_util import lines, run

pytestmark = pytest.mark.spark

N = 24_000  # lines: above 2 × 10k seqs, so a micro-batch holding them is read in 2 partitions


def test_segments_in_two_partitions_keep_arrival_order(server_context, tmp_path):
    # ~300 kB: one segment (committed at once), so the first micro-batch holds every line and the
    # partition boundary cuts that segment in the middle
    assert sources.CHUNK_BYTES > 400_000
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    bad = {7, 5_000, 15_001, 23_999}
    texts = ["oops" if i in bad else "" if i % 1000 == 3 else json.dumps({"i": i}) for i in range(N)]
    src.write_text("\n".join(texts) + "\n")
    good = [i for i in range(N) if i not in bad and i % 1000 != 3]
    expected, prev = [], None
    for i in good:  # the sum over the last two tuples depends on their order
        expected.append({"i": i, "s": i + (prev if prev is not None else 0)})
        prev = i
    t = Topology("segs", server_context)
    drops = []
    t.subscribe_dropped(drops.append)
    try:
        run(t, f"""
            CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
            CREATE STREAM x AS SELECT RSTREAM max(i) AS i, sum(i) AS s FROM s [RANGE 2 TUPLES];
            CREATE SINK k TYPE file WITH path = "{out}";
            INSERT INTO k FROM x;""")
        consumer = t.consumers["k"]
        assert wait_until(lambda: consumer.handle is not None and consumer.handle.last_progress is not None,
                          120, 0.05)
        run(t, "RESUME SOURCE s;")  # one micro-batch will hold (nearly) everything
        assert wait_until(lambda: t.node("stream", "x")["state"] == "stopped" and len(drops) >= len(bad), 240, 0.1)
        assert t.node("source", "s")["status"]["output_stats"]["num_sent_total"] == N - N // 1000
    finally:
        t.stop()
    assert lines(out) == expected
    assert sorted(int(d["error"].split(":")[2]) for d in drops) == sorted(i + 1 for i in bad)
    assert all(d["node_name"] == "s" and d["event_type"] == "input" for d in drops)
