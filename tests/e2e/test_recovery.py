"""Crash recovery: ``kill -9`` of ``sbpy run`` in the middle of a file source → ``[RANGE 10 TUPLES]``
aggregate → file sink pipeline, then a restart on the same config: the persisted topology is rebuilt,
the source resumes from its journal, the query from its checkpoint, and the sink holds every output
tuple exactly once, in order."""
from __future__ import annotations

import json
import time

import pytest

from sbpy.bql.runtime.testing import run_query
from server_process import lines, new_server, wait, warm_up

pytestmark = pytest.mark.spark

N = 600  # input lines
INTERVAL = 0.025  # seconds between lines: the source runs ~15 s
QUERY = "SELECT RSTREAM count(*) AS n, sum(x) AS s, max(id) AS last FROM src [RANGE 10 TUPLES]"


def test_kill_9_and_restart_exactly_once(tmp_path):
    rows = [{"id": i, "x": i} for i in range(N)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"src": rows})
    assert len(expected) == N
    server = new_server(tmp_path)
    try:
        server.start()
        t0 = time.monotonic()
        warm_up(server, tmp_path)
        print(f"warm-up: {time.monotonic() - t0:.1f} s")
        t0 = time.monotonic()
        server.file_pipeline("rec", "agg", QUERY, src, out, INTERVAL)
        # kill -9 while the source is still reading, normally once the sink has outputs; on a very
        # slow machine (no output yet when 80 % of the input is journaled) still before the source ends
        wait(lambda: len(lines(out)) >= 1 or server.source_sent("rec") >= N * 0.8, 240, "the first outputs",
             server)
        server.kill()
        sent = len((tmp_path / "data/topologies/rec/journal/src/log.jsonl").read_text().splitlines())
        before = lines(out)
        print(f"killed after {len(before)} outputs, {sent} journal entries, {time.monotonic() - t0:.1f} s")
        assert sent < N, "the source ended before the crash"
        assert before == expected[:len(before)]

        t0 = time.monotonic()
        server.start()
        print(f"restarted: {time.monotonic() - t0:.1f} s")
        assert server.get("/topologies") == {"topologies": [{"name": "rec"}]}
        server.wait_stopped("rec", "agg", 240, "the stream to stop after the restart")
        wait(lambda: len(lines(out)) >= N, 30, "every output in the sink", server)
        print(f"recovered: {time.monotonic() - t0:.1f} s")
        server.drop("rec")
        text = out.read_text()
    finally:
        server.kill()
    assert text.endswith("\n")
    got = [json.loads(x) for x in text.splitlines()]  # no torn line, no blank line
    assert len(got) == len(expected)
    assert got == expected  # every output exactly once, in order
    assert not (tmp_path / "data/topologies/rec").exists()
