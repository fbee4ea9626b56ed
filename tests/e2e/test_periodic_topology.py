"""EMIT PERIODIC in a running topology: a source that stays open (rewindable file source waiting for a
rewind) → a PERIODIC ... REPEAT stream → file sink. Only wall-clock ticks can write to the sink while the
input is open; the topology derives the ticks itself (server/topology.py passes no flag)."""
from __future__ import annotations

import json
import time

import pytest

from sbpy.bql.parser import parse_script
from sbpy.server.topology import Topology

pytestmark = pytest.mark.spark


def lines(path):
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def wait_for(cond, timeout=120.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return False


def test_periodic_repeat_writes_to_the_sink_while_the_source_is_open(server_context, tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"k": k}) + "\n" for k in ("a", "b", "a")))
    t = Topology("e2e_periodic", server_context)
    try:
        for p in parse_script(f"""
                CREATE PAUSED SOURCE s TYPE file WITH path = "{src}", rewindable = true;
                CREATE STREAM counts AS SELECT RSTREAM k, count(*) AS c FROM s GROUP BY k
                    EMIT PERIODIC 500 MILLISECONDS REPEAT;
                CREATE SINK k TYPE file WITH path = "{out}";
                INSERT INTO k FROM counts;
                RESUME SOURCE s;"""):
            t.execute(p)
        # every period re-emits both groups: wait for three emissions of the final counts
        assert wait_for(lambda: lines(out).count({"k": "a", "c": 2}) >= 3 and
                        lines(out).count({"k": "b", "c": 1}) >= 3)
        assert t.node("source", "s")["state"] == "running"  # the input never ended
        assert t.node("stream", "counts")["state"] == "running"
    finally:
        t.stop()
    rows = lines(out)
    assert set(map(json.dumps, rows)) <= {json.dumps(r) for r in (
        {"k": "a", "c": 1}, {"k": "a", "c": 2}, {"k": "b", "c": 1})}
