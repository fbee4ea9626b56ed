"""Latency of one tuple through journal → 2 fused stages → foreachBatch, and query start time.

Run: ``/work/venv/bin/python bench/latency.py [n_tuples] [trigger_ms]``. Prints, never asserts.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from sbpy.bql.spark.operator import StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.testing import TestJournal, pass_through, running_count
from sbpy.server.context import ServerContext


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    trigger_ms = int(sys.argv[2]) if len(sys.argv) > 2 else None
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-bench-"))
    import os

    conf = {}
    if os.environ.get("PROVIDER") == "hdfs":
        conf["spark.sql.streaming.stateStore.providerClass"] = (
            "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider")
    ctx = ServerContext(data_dir=tmp, master="local[2]", conf=conf)
    t0 = time.perf_counter()
    ctx.warm_up().join()
    print(f"session start + first action: {time.perf_counter() - t0:.2f} s")
    spark = ctx.spark()
    journal = TestJournal(tmp / "journal")
    seen: dict[int, float] = {}
    cond = threading.Condition()

    def on_batch(batch_id, rows):
        now = time.perf_counter()
        with cond:
            for r in rows:
                if r["kind"] == "out":
                    seen[r["seq"]] = now
            cond.notify_all()

    def wait_for(seq: int) -> float:
        with cond:
            cond.wait_for(lambda: seq in seen, timeout=60)
            return seen[seq]

    stages = [StageSpec("s1", "", ("a",), factory=pass_through),
              StageSpec("s2", "", ("s1",), factory=running_count)]
    spec = QuerySpec("bench.q", tmp / "journal", ("a",), stages, tmp / "ck", on_batch=on_batch,
                     trigger_ms=trigger_ms, shuffle_partitions=int(os.environ.get("PARTS", "1")))
    journal.append([("a", {"i": 0})])
    t0 = time.perf_counter()
    handle = start_query(spark, spec)
    t1 = time.perf_counter()
    wait_for(1)
    t2 = time.perf_counter()
    print(f"start_query returned in {t1 - t0:.2f} s; first tuple out after {t2 - t0:.2f} s")
    lat = []
    for i in range(1, n + 1):
        appended = time.perf_counter()
        (seq,) = journal.append([("a", {"i": i})])
        lat.append((wait_for(seq) - appended) * 1000)
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
    print(f"{n} tuples, trigger={trigger_ms}: p50 {statistics.median(lat):.0f} ms, p99 {p99:.0f} ms, "
          f"min {lat[0]:.0f} ms, max {lat[-1]:.0f} ms")
    prog = handle.last_progress or {}
    print("last batch durations:", prog.get("durationMs"))
    t0 = time.perf_counter()
    handle.stop()
    print(f"stop: {time.perf_counter() - t0:.2f} s")
    ctx.close()


if __name__ == "__main__":
    main()
