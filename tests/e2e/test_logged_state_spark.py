"""The fused operator's logged state layout (``bql/spark/state_log.py``) end to end: queries whose window
holds more than the driver's bound (``SMALL_STATE_TUPLES``) run on Spark in the logged layout. A
``kill -9`` of ``sbpy run`` and a restart: the new Python workers rebuild the pipeline from base + log and
the sink holds every output exactly once (as ``test_recovery``); a split hands the logged state over
(Spark's state data source, replayed) and the window state goes on (as ``test_replan_spark``)."""
from __future__ import annotations

import json
import time

import pytest
from e2e_util import lines as e2e_lines
from gated_source import gate
from sbpy.bql.parser import parse_script
from sbpy.bql.runtime.testing import run_query
from sbpy.bql.spark.state_log import LAYOUT_FILE, LOGGED
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology
from server_process import lines, new_server, wait, warm_up

pytestmark = pytest.mark.spark

N = 600  # input lines of the kill test
INTERVAL = 0.025  # seconds between lines: the source runs ~15 s
QUERY = "SELECT RSTREAM count(*) AS n, sum(x) AS s, max(id) AS last FROM src [RANGE 300 TUPLES]"
FIRST = 20  # rows the split test's source emits before the split
SPLIT_N = 100
SPLIT_QUERY = "SELECT RSTREAM count(*) AS n, max(a) AS last, sum(a) AS s FROM src [RANGE 300 TUPLES]"


def test_kill_9_and_restart_exactly_once_on_the_logged_layout(tmp_path):
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
        layouts = [json.loads(p.read_text())["layout"]
                   for p in (tmp_path / "data/topologies/rec").rglob(LAYOUT_FILE)]
        assert layouts == [LOGGED]  # the query ran on Spark in the logged layout
        server.drop("rec")
        text = out.read_text()
    finally:
        server.kill()
    assert text.endswith("\n")
    got = [json.loads(x) for x in text.splitlines()]  # no torn line, no blank line
    assert len(got) == len(expected)
    assert got == expected  # every output exactly once, in order
    left = tmp_path / "data/topologies/rec"
    assert not left.exists(), sorted(str(p.relative_to(left)) for p in left.rglob("*"))


def test_split_on_spark_keeps_logged_window_state(server_context, tmp_path):
    from sbpy.plugins.loader import load_modules

    load_modules(["gated_source"])
    gate("split_logged").clear()
    rows = [{"a": i} for i in range(SPLIT_N)]
    k1, k2 = tmp_path / "k1.jsonl", tmp_path / "k2.jsonl"
    expected = run_query(SPLIT_QUERY, {"src": rows})
    t = Topology("split_logged", server_context)
    try:
        for p in parse_script(f"""
                CREATE PAUSED SOURCE src TYPE gated_rows WITH n = {SPLIT_N}, first = {FIRST}, gate = "split_logged";
                CREATE STREAM x AS {SPLIT_QUERY};
                CREATE SINK k1 TYPE file WITH path = "{k1}";
                INSERT INTO k1 FROM x;
                RESUME SOURCE src;"""):
            t.execute(p)
        assert wait_until(lambda: len(e2e_lines(k1)) == FIRST, 180, 0.05)
        old_ck = t.consumers["k1"].checkpoint_dir
        assert json.loads((old_ck / LAYOUT_FILE).read_text())["layout"] == LOGGED
        for p in parse_script(f'CREATE SINK k2 TYPE file WITH path = "{k2}"; INSERT INTO k2 FROM x;'):
            t.execute(p)
        gate("split_logged").set()
        assert t.consumers["x"].stage_names == ["x"] and t.consumers["k1"].stage_names == []
        assert not old_ck.exists()
        assert wait_until(lambda: t.node("stream", "x")["state"] == "stopped", 240, 0.1)
        done = wait_until(lambda: len(e2e_lines(k1)) == SPLIT_N and e2e_lines(k2)[-1:] == expected[-1:],
                          60, 0.1)
        assert done, (len(e2e_lines(k1)), e2e_lines(k1)[-2:], e2e_lines(k2)[-2:],
                      {c.id: (c.error, c.done, c.stopped, c.start_seq, c.chain.inputs,
                              c.handle and c.handle.is_active, c.handle and c.handle.error,
                              c.handle and (c.handle.last_progress or {}).get("sources"))
                       for c in t.consumers.values()},
                      t.journal.head, (t.journal.dir / "x" / "log.jsonl").read_text().splitlines()[-3:])
    finally:
        gate("split_logged").set()
        t.stop()
    assert e2e_lines(k1) == expected  # the window state went on through the split
    got2 = e2e_lines(k2)
    assert got2 and got2 == expected[SPLIT_N - len(got2):]
