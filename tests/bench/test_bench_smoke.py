"""Keep the bench scripts from rotting: their pure-Python parts in-process, their Spark paths at a tiny size.

No timing is asserted anywhere; the checks are that the scripts run and that their own correctness
checks (same rows as the hand-written reference, expected row counts) hold.
"""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import benchlib  # noqa: E402


def test_benchlib_helpers(tmp_path):
    assert benchlib.percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert benchlib.percentile([5, 1, 3, 2, 4], 0.99) == 5
    size = benchlib.write_jsonl(tmp_path / "x.jsonl", 160, chunk=50)
    lines = (tmp_path / "x.jsonl").read_bytes().splitlines()
    assert len(lines) == 160 and size == (tmp_path / "x.jsonl").stat().st_size
    assert benchlib.expected_filter_count(160) == 110  # 11 of every 16 prices are < 8
    text = benchlib.table(("a", "b"), [("x", 1.5), ("yy", 12345)])
    assert text.splitlines()[2].startswith("x ") and "12,345" in text


def test_b3_kernel_matches_hand_written_references():
    import b3_per_tuple

    results = b3_per_tuple.in_process(400)
    assert [r["name"] for r in results] == [c[0] for c in b3_per_tuple.CASES]
    for r in results:
        assert r["same"], r["name"]
        assert r["outputs"] > 0


def test_b3_shapes_match_the_reference_kernel():
    """Each shape's rows through the kernel's choice equal the reference kernel's, and the table prints."""
    import b3_per_tuple
    import b3_shapes

    tuples = b3_per_tuple.kernel_tuples(b3_per_tuple.single_input(300))
    for name, query in b3_shapes.SHAPES:
        fast, ref = b3_shapes._answers(query, tuples, "auto")[1], b3_shapes._answers(query, tuples, "reference")[1]
        assert fast == ref and any(fast), name
    out = subprocess.run([sys.executable, str(Path(b3_shapes.__file__)), "--n", "300", "--ref-n", "100",
                          "--rounds", "1"], capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.count(" yes") == len(b3_shapes.SHAPES) and " NO" not in out


def test_profile_operator_copy_runs_without_spark(tmp_path):
    """The instrumented operator function still fits the operator module it copies."""
    import json

    import pandas as pd

    import profile_batch
    from sbpy.bql.spark import journal_format as jf
    from sbpy.bql.spark.operator import OUTPUT_COLUMNS, StageSpec
    from sbpy.bql.spark.testing import StubGroupState

    stages = [StageSpec(*s) for s in profile_batch.STAGES]
    log = tmp_path / "w.jsonl"
    fn = profile_batch.instrumented_state_function("smoke", stages, str(log))
    state = StubGroupState()
    ts = jf.ts_to_us(dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
    frame = pd.DataFrame({"seq": [2, 1], "input": ["src", "src"], "ts": [ts, ts],
                          "data": [jf.encode_data({"id": 2, "price": 9.0}), jf.encode_data({"id": 1, "price": 3.0})],
                          "end": [False, False]})
    (out,) = list(fn((0,), iter([frame]), state))
    assert list(out.columns) == OUTPUT_COLUMNS
    outs = out[out["kind"] == "out"]
    assert [jf.decode_data(d) for d in outs["data"]] == [{"id": 1, "p2": 6.0}]
    assert state.exists
    rec = json.loads(log.read_text())
    assert rec["rows_in"] == 2 and rec["snap_bytes"] > 0
    summary = profile_batch.summarize({"progress": [], "worker": [rec], "timers": {"collect_ms": [1.0]},
                                       "lat": [0.1]})
    assert summary["worker.run_ms"] >= 0 and summary["driver.collect_ms"] == 1.0


def _run(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                          timeout=540)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "!!" not in proc.stdout, proc.stdout  # the scripts flag wrong row counts with "!!"
    return proc.stdout


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.skipif(len(benchlib.ALL_CPUS) < 2, reason="pinning to one CPU of one changes nothing")
def test_pin_process_tree_reaches_children_and_restores():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        one = min(benchlib.ALL_CPUS)
        assert benchlib.pin_process_tree([one]) >= 2
        assert os.sched_getaffinity(0) == {one} and os.sched_getaffinity(child.pid) == {one}
        benchlib.pin_process_tree(None)
        assert os.sched_getaffinity(0) == set(benchlib.ALL_CPUS) == os.sched_getaffinity(child.pid)
    finally:
        benchlib.pin_process_tree(None)
        child.communicate(b"")


def test_b1_runs_tiny():
    out = _run("b1_filter.py", "--rows", "3000", "--rounds", "2", "--query-only")
    assert "sbpy topology" in out and "× streaming ref" in out and "query only" in out
    assert "row checks: all same" in out, out


@pytest.mark.spark
@pytest.mark.slow
def test_b6_runs_tiny():
    out = _run("b6_scaling.py", "--rows", "3000", "--mr-rows", "0", "--window-rows", "2000", "--window-keys", "50",
               "--rounds", "1", "--timed", "1", "--pin")
    assert "B1 sbpy topology" in out and "gain" in out and "(native-jvm)" in out
    assert "row checks: B1 same on both masters" in out, out
    assert "local[1] pinned to one CPU" in out
    assert "tumble GROUP BY local[2] (keyed)" in out and "tumble GROUP BY local[1] (spark)" in out, out
    assert "tumble keyed/driver same on both masters, Spark's window() rows the same" in out, out


@pytest.mark.spark
@pytest.mark.slow
def test_b5_runs_tiny():
    out = _run("b5_match.py", "--n", "3000", "--spark", "3000", "--guard", "200", "--batch", "1000")
    assert "Spark keyed (keyed)" in out and "Spark planned: driver (one thread)" in out, out
    table = out.split("same matches", 1)[1].split("guard PATTERN", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith(("in-process", "Spark"))]
    assert len(rows) == 5 and all(line.rstrip().endswith("yes") for line in rows), out
    assert "OVER" not in out


@pytest.mark.spark
@pytest.mark.slow
def test_b5_keyed_only_runs_the_keyed_plan_alone():
    out = _run("b5_match.py", "--n", "3000", "--spark", "3000", "--guard", "0", "--batch", "1000", "--keyed-only")
    table = out.split("same matches", 1)[1]
    rows = [line for line in table.splitlines() if line.startswith(("in-process", "Spark"))]
    assert len(rows) == 1 and rows[0].startswith("Spark keyed (keyed)") and rows[0].rstrip().endswith("yes"), out
    assert "after the first batch" in table and "planned" not in out, out


@pytest.mark.spark
@pytest.mark.slow
def test_b2_runs_tiny():
    out = _run("b2_latency.py", "--n", "3", "--gap-ms", "0")
    assert "ratio sbpy / PySpark" in out


@pytest.mark.spark
@pytest.mark.slow
def test_profile_runs_tiny():
    out = _run("profile_batch.py", "--batches", "2", "--only", "production (RocksDB),no operator")
    assert "worker.run_ms" in out and "spark.triggerExecution" in out


@pytest.mark.spark
@pytest.mark.slow
def test_b8_runs_tiny():
    out = _run("b8_topology_windows.py", "--rows", "30000", "--keys", "20", "--rounds", "1", "--forms", "tumble,session")
    assert "sbpy/PySpark" in out
    for form in ("tumble", "session"):  # the windows PySpark closed hold the same rows on both sides
        (line,) = [ln for ln in out.splitlines() if ln.startswith(f"{form} ")]
        assert line.rstrip().endswith("yes"), out
