"""Randomized kill -9 of ``sbpy run`` (CI size): one server runs the three cases of ``crash_harness``
(a ``bql_file`` topology, a REST topology, two sinks on one stream) at once and is killed twice at random
points (before output, mid-stream, right after a source ends, during a re-plan, or the Spark JVM alone);
after the restarts every sink holds every output exactly once, window values included, also when a kill
cut a re-plan before its INSERT INTO was persisted (``server/nodes/replan.py``). ``SBPY_CRASH_SEED``
replays a seed; the longer run is ``tests/stress/crash_random.py``."""
from __future__ import annotations

import os
import random

import pytest
from crash_harness import CrashRun, check, expected, summary

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
