"""B2 — latency of one tuple through source → 2 streams → sink on a running topology (p50, p99).

sbpy: a real ``Topology`` on a ``ServerContext``::

    CREATE SOURCE src TYPE bench_push;                  -- emits what the bench pushes, flushed at once
    CREATE STREAM s1 AS SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8;
    CREATE STREAM s2 AS SELECT ISTREAM id, price * 2 AS p2 FROM s1 [RANGE 2 TUPLES];
    CREATE SINK k TYPE bench_probe;                     -- records when each tuple is written
    INSERT INTO k FROM s2;

so the path is source thread → journal → one fused Spark query (both streams) → foreachBatch → sink.
Latency = sink write time − the moment the source emitted the tuple. One tuple is in flight at a
time, with a random 0–``--gap-ms`` pause between tuples so arrivals do not phase-lock with triggers.

Reference, same SparkSession, same (default: as soon as possible) trigger: one hand-written PySpark
streaming query doing the same filter and projection — the JSON file source over a folder (a tuple is
one file, written then renamed in) → ``where price < 8`` → ``select id, price * 2`` → ``foreachBatch``
collect. Latency = collect time − rename time.

Run: ``/work/venv/bin/python bench/b2_latency.py [--n 60] [--gap-ms 100]``. Prints, never asserts.
"""
from __future__ import annotations

import argparse
import os
import queue
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson  # noqa: E402

import benchlib  # noqa: E402

SCRIPT = """
CREATE SOURCE src TYPE bench_push;
CREATE STREAM s1 AS SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8;
CREATE STREAM s2 AS SELECT ISTREAM id, price * 2 AS p2 FROM s1 [RANGE 2 TUPLES];
CREATE SINK k TYPE bench_probe;
INSERT INTO k FROM s2;
"""


class Probe:
    """Arrival times by tuple id, with a condition to wait on."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.sent: dict[int, float] = {}
        self.seen: dict[int, float] = {}

    def arrived(self, ids: list[int]) -> None:
        now = time.perf_counter()
        with self.cond:
            for i in ids:
                self.seen.setdefault(i, now)
            self.cond.notify_all()

    def wait(self, i: int, timeout: float = 120) -> float | None:
        with self.cond:
            self.cond.wait_for(lambda: i in self.seen, timeout=timeout)
            return self.seen.get(i)


def make_types(q: queue.Queue, probe: Probe) -> tuple[type, type]:
    class PushSource:
        """Emits each pushed dict at once (flushed to the journal); None ends it."""

        def __init__(self, params: dict[str, Any]):
            pass

        def run(self, ctx: Any) -> None:
            while not ctx.stopping:
                try:
                    data = q.get(timeout=0.1)
                except queue.Empty:
                    continue
                if data is None:
                    return
                probe.sent[data["id"]] = time.perf_counter()
                ctx.emit(data)
                ctx.flush()

    class ProbeSink:
        def __init__(self, params: dict[str, Any], recovering: bool = False):
            pass

        def write(self, tuples: list[dict[str, Any]], batch: Any = None) -> None:
            probe.arrived([t["id"] for t in tuples])

        def close(self) -> None:
            pass

    return PushSource, ProbeSink


def progress_means(progress: list[dict[str, Any]]) -> dict[str, float]:
    """Mean ``durationMs`` per key over batches that had input."""
    rows = [p["durationMs"] for p in progress if p.get("numInputRows")]
    keys = sorted({k for r in rows for k in r})
    return {k: sum(r.get(k, 0) for r in rows) / len(rows) for k in keys} if rows else {}


def sbpy_topology(ctx: Any, n: int, gap_ms: float) -> tuple[list[float], dict[str, float], float]:
    from sbpy.bql.parser import parse_script
    from sbpy.server.topology import Topology

    q: queue.Queue = queue.Queue()
    probe = Probe()
    push, sink = make_types(q, probe)
    t = Topology("b2", ctx)
    t.plugins.source_types.register("bench_push", push, replace=True)
    t.plugins.sink_types.register("bench_probe", sink, replace=True)
    lat: list[float] = []
    try:
        t0 = time.perf_counter()
        for p in parse_script(SCRIPT):
            t.execute(p)
        handle = t.consumers["k"].handle
        q.put(benchlib.row_of(0) | {"price": 1.0})  # the first tuple also waits for the query to start
        probe.wait(0)
        start_s = time.perf_counter() - t0
        for i in range(1, n + 1):
            time.sleep(random.uniform(0, gap_ms) / 1000)
            q.put({"id": i, "price": 1.0 + i % 5})
            got = probe.wait(i)
            if got is None:
                print(f"  !! tuple {i} did not reach the sink")
                break
            lat.append(got - probe.sent[i])
        means = progress_means(handle._query.recentProgress)
    finally:
        q.put(None)
        t.stop()
    return lat, means, start_s


def reference(spark: Any, tmp: Path, n: int, gap_ms: float) -> tuple[list[float], dict[str, float], float]:
    from pyspark.sql import functions as F

    src, stage = tmp / "ref-in", tmp / "ref-stage"
    src.mkdir()
    stage.mkdir()
    probe = Probe()

    def on_batch(df: Any, batch_id: int) -> None:
        probe.arrived([r["id"] for r in df.collect()])

    def push(i: int, price: float) -> None:
        tmpf = stage / f"{i}.json"
        tmpf.write_bytes(orjson.dumps({"id": i, "price": price}) + b"\n")
        probe.sent[i] = time.perf_counter()
        os.replace(tmpf, src / f"{i}.json")

    t0 = time.perf_counter()
    query = (spark.readStream.schema("id long, price double").json(str(src))
             .where("price < 8").select("id", (F.col("price") * 2).alias("p2"))
             .writeStream.option("checkpointLocation", str(tmp / "ref-ck")).foreachBatch(on_batch).start())
    lat: list[float] = []
    try:
        push(0, 1.0)
        probe.wait(0)
        start_s = time.perf_counter() - t0
        for i in range(1, n + 1):
            time.sleep(random.uniform(0, gap_ms) / 1000)
            push(i, 1.0 + i % 5)
            got = probe.wait(i)
            if got is None:
                print(f"  !! reference tuple {i} did not arrive")
                break
            lat.append(got - probe.sent[i])
        means = progress_means(query.recentProgress)
    finally:
        query.stop()
    return lat, means, start_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60, help="tuples measured per path")
    ap.add_argument("--gap-ms", type=float, default=100, help="max random pause between tuples")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting for the session (repeatable), as sensorbee.yaml's spark.conf")
    a = ap.parse_args()
    print(f"B2: one tuple through source → 2 streams → sink, {a.n} tuples; {benchlib.load_note()}"
          + (f"\nextra conf: {a.conf}" if a.conf else ""))
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b2-"))
    ctx = benchlib.server_context(tmp / "data", a.master, a.conf)
    try:
        spark = benchlib.start_session(ctx)
        ref_lat, ref_means, ref_start = reference(spark, tmp, a.n, a.gap_ms)
        sb_lat, sb_means, sb_start = sbpy_topology(ctx, a.n, a.gap_ms)
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    ref, sb = benchlib.summary_ms(ref_lat), benchlib.summary_ms(sb_lat)
    print()
    print(benchlib.table(("path", "p50 ms", "p99 ms", "min ms", "max ms", "start→1st tuple s"), [
        ("PySpark: json file source → filter → project → foreachBatch", ref["p50"], ref["p99"], ref["min"],
         ref["max"], ref_start),
        ("sbpy topology: source → s1 → s2 (planned) → sink", sb["p50"], sb["p99"], sb["min"], sb["max"], sb_start),
    ]))
    print(f"ratio sbpy / PySpark: p50 {sb['p50'] / ref['p50']:.2f}×, p99 {sb['p99'] / ref['p99']:.2f}×")
    keys = sorted(set(ref_means) | set(sb_means))
    print("\nmean micro-batch durationMs (batches with input):")
    print(benchlib.table(("phase", "PySpark", "sbpy"),
                         [(k, ref_means.get(k, 0.0), sb_means.get(k, 0.0)) for k in keys]))


if __name__ == "__main__":
    main()
