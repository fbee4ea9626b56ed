"""Randomized kill -9 of ``sbpy run`` (CI size): one server runs the three cases of ``crash_harness``
(a ``bql_file`` topology, a REST topology, two sinks on one stream) at once and is killed twice at random
points (before output, mid-stream, right after a source ends, during a re-plan, or the Spark JVM alone);
after the restarts every sink holds every output exactly once, window values included, also when a kill
cut a re-plan before its INSERT INTO was persisted (``server/nodes/replan.py``). ``SBPY_CRASH_SEED``
replays a seed; the longer run is ``tests/stress/crash_random.py``."""
from __future__ import annotations

import json
import os
import random

import pytest
from crash_harness import QUERY, CrashRun, check, expected, summary
from server_process import lines, new_server, wait

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_check_counts_lost_duplicated_and_wrong_windows():
    want = expected(12)
    assert check(want, want).ok
    replayed = want[:5] + want  # every pre-crash output written again
    assert check(replayed, want).duplicated == 5 and not check(replayed, want).ordered
    restarted = want[:5] + [{"n": min(i, 10), "m": i + 5} for i in range(1, 8)]  # windows restarted empty
    assert check(restarted, want).wrong == 7
    assert check(want[:3] + want[4:], want).lost == 1
    assert check(want[6:], want, tail=True).ok and not check(want[6:], want).ok


def test_random_kills_exactly_once(tmp_path):
    seed = int(os.environ.get("SBPY_CRASH_SEED", random.randrange(1_000_000)))
    print(f"SBPY_CRASH_SEED={seed}")
    results = CrashRun(tmp_path, seed=seed, kills=2).run()
    print(summary(results))
    assert all(r.ok for r in results.values()), f"seed {seed}:\n{summary(results)}"


def test_kill_after_a_split_whose_insert_into_was_not_persisted(tmp_path):
    """The re-plan kill window, made deterministic: a late sink splits ``s`` out of the running query; the
    statements file is then put back to what a kill before the INSERT INTO's persisting leaves (no late
    sink) and the server is killed. The restart computes ``s`` on its own again from the split's
    checkpoints (``replan.rematerialize``): the first sink gets every output once, windows included."""
    n = 200
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(1, n + 1)))
    server = new_server(tmp_path)
    server.start(timeout=240)
    try:
        server.file_pipeline("t", "s", QUERY, src, out, 0.05)
        wait(lambda: len(lines(out)) >= 10, 240, "the first outputs", server)
        server.queries("t", f'CREATE SINK late TYPE file WITH path = "{tmp_path / "late.jsonl"}";\n'
                            "INSERT INTO late FROM s;")
        statements = tmp_path / "data" / "topologies" / "t" / "statements.bql"
        kept = [x for x in statements.read_text().splitlines(keepends=True)
                if not x.startswith(("CREATE SINK late ", "INSERT INTO late "))]
        assert len(kept) == 5  # source, stream, sink, its INSERT INTO, RESUME
        statements.write_text("".join(kept))
        server.kill()
        server.start(timeout=240)
        wait(lambda: len(lines(out)) >= n, 300, "every output after the restart", server)
        assert [k["name"] for k in server.get("/topologies/t/sinks")["sinks"]] == ["snk"]
    finally:
        server.kill()
    got = check(lines(out), expected(n))
    assert got.ok, got
