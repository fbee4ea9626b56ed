"""A stream computes from its CREATE, through a real ``sbpy run`` on Spark (issue 14): a
``[RANGE 10 TUPLES]`` aggregate created while its source runs and read by a sink attached later gives
the sink full windows from its first output on; after ``kill -9`` and a restart the persisted topology
resumes the stream's own query from its checkpoint, and the sink holds every output from its attach on
exactly once, in order."""
from __future__ import annotations

import json

import httpx
import pytest

from sbpy.bql.runtime.testing import run_query
from server_process import lines, new_server, wait, warm_up

pytestmark = pytest.mark.spark

N = 600  # input lines
INTERVAL = 0.025  # seconds between lines: the source runs ~15 s
QUERY = "SELECT RSTREAM count(*) AS n, max(id) AS last FROM src [RANGE 10 TUPLES]"


def _received(server, stream: str) -> int:
    status = server.get(f"/topologies/fc/streams/{stream}")["stream"]["status"]
    return status["input_stats"]["inputs"].get("src", {}).get("num_received", 0)


def test_a_late_sink_gets_full_windows_and_a_restart_resumes_the_stream_once(tmp_path):
    rows = [{"id": i} for i in range(N)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"src": rows})
    server = new_server(tmp_path)
    try:
        server.start()
        warm_up(server, tmp_path)
        r = httpx.post(server.api + "/topologies", json={"name": "fc"}, timeout=30)
        assert r.status_code == 200, r.text
        server.queries("fc", f"""
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = {INTERVAL};
            CREATE STREAM agg AS {QUERY};
            RESUME SOURCE src;""")
        wait(lambda: _received(server, "agg") >= 20, 240, "the stream's own query to compute", server)
        server.queries("fc", f'CREATE SINK snk TYPE file WITH path = "{out}"; INSERT INTO snk FROM agg;')
        plan = httpx.post(f"{server.api}/topologies/fc/queries", timeout=60,
                          json={"queries": "EXPLAIN SELECT RSTREAM * FROM agg [RANGE 1 TUPLES];"}).json()["plan"]
        assert plan["inputs"] == ["agg"] and "agg is computed by its own query from its CREATE" in plan["text"]
        wait(lambda: len(lines(out)) >= 1 or server.source_sent("fc") >= N * 0.8, 240, "the first outputs",
             server)
        server.kill()
        before = lines(out)  # what the sink held at the kill

        server.start()
        server.wait_stopped("fc", "agg", 240, "the stream to stop after the restart")
        wait(lambda: lines(out)[-1:] == expected[-1:], 60, "the last output in the sink", server)
        server.drop("fc")
        got = lines(out)
    finally:
        server.kill()
    assert got and got[0]["n"] == 10  # the window was full when the sink attached
    assert got == expected[len(expected) - len(got):]  # from the attach on, each output exactly once
    assert before == got[:len(before)]
