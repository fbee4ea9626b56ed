"""B2 — latency of one tuple through source → 2 streams → sink on a running topology (p50, p99).

sbpy: a real ``Topology`` on a ``ServerContext``, in one of two forms (``--forms``):

``fused`` — SensorBee's usual script, the source created paused and resumed last::

    CREATE PAUSED SOURCE src TYPE bench_push;           -- emits what the bench pushes, flushed at once
    CREATE STREAM s1 AS SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8;
    CREATE STREAM s2 AS SELECT ISTREAM id, price * 2 AS p2 FROM s1 [RANGE 2 TUPLES];
    CREATE SINK k TYPE bench_probe;                     -- records when each tuple is written
    INSERT INTO k FROM s2;
    RESUME SOURCE src;

so the path is source thread → journal → one Spark query computing both streams (planned **driver**:
a 2-tuple window, run in ``foreachBatch``) → sink.

``eager`` — the same statements with the source running from its CREATE (no PAUSED, no RESUME): a
tuple can reach ``s2`` at its CREATE, so ``s2`` (a window: its output depends on earlier tuples) is
computed by its own query from then on and journaled, and the sink reads it in a second query —
two micro-batches in series.

Latency = sink write time − the moment the source emitted the tuple. One tuple is in flight at a
time, with a random 0–``--gap-ms`` pause between tuples so arrivals do not phase-lock with triggers.
Each form also runs with ``SBPY_DRIVER_READ=spark`` when ``--driver-read`` names it (the batch
collected through a Spark job, the read before session 9) next to ``journal`` (the default: the
driver reads the batch's journal range itself).

Reference, same SparkSession (so the same settings: no no-data batches, the FileSystem checkpoint
manager), same (default: as soon as possible) trigger: one hand-written PySpark streaming query doing
the same filter and projection — the JSON file source over a folder (a tuple is one file, written then
renamed in) → ``where price < 8`` → ``select id, price * 2`` → ``foreachBatch`` collect. Latency =
collect time − rename time. The journal writes of sbpy's source are fsynced (log, HEAD, folder); the
reference's file is not.

The variants run in ``--rounds`` alternating rounds in one session, so load changes hit them alike.

Run: ``.venv/bin/python bench/b2_latency.py [--n 60] [--gap-ms 100] [--rounds 2] [--forms fused,eager]
[--driver-read journal,spark]``. Prints, never asserts.
"""
from __future__ import annotations

import argparse
import os
import queue
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib
import orjson

STATEMENTS = """
CREATE STREAM s1 AS SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8;
CREATE STREAM s2 AS SELECT ISTREAM id, price * 2 AS p2 FROM s1 [RANGE 2 TUPLES];
CREATE SINK k TYPE bench_probe;
INSERT INTO k FROM s2;
"""
SCRIPTS = {
    "fused": "CREATE PAUSED SOURCE src TYPE bench_push;" + STATEMENTS + "RESUME SOURCE src;\n",
    "eager": "CREATE SOURCE src TYPE bench_push;" + STATEMENTS,
}


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


def sbpy_topology(ctx: Any, n: int, gap_ms: float, form: str, name: str,
                  hops: Hops | None = None) -> tuple[list[float], dict[str, float], float]:
    """One topology of ``form`` (``SCRIPTS``): latencies, mean batch phases of the sink's query, and the
    seconds from the first statement to the first tuple at the sink."""
    from sbpy.bql.parser import parse_script
    from sbpy.server.topology import Topology

    q: queue.Queue = queue.Queue()
    probe = Probe()
    push, sink = make_types(q, probe)
    t = Topology(name, ctx)
    t.plugins.source_types.register("bench_push", push, replace=True)
    t.plugins.sink_types.register("bench_probe", sink, replace=True)
    lat: list[float] = []
    try:
        t0 = time.perf_counter()
        for p in parse_script(SCRIPTS[form]):
            t.execute(p)
        handle = t.consumers["k"].handle
        q.put(benchlib.row_of(0) | {"price": 1.0})  # the first tuple also waits for the queries to start
        probe.wait(0)
        start_s = time.perf_counter() - t0
        lat = _measure(n, gap_ms, probe, lambda i, price: q.put({"id": i, "price": price}))
        progress = handle._query.recentProgress
        means = progress_means(progress)
        if hops is not None:
            hops.report(probe.sent, probe.seen, progress)
    finally:
        q.put(None)
        t.stop()
    return lat, means, start_s


def _measure(n: int, gap_ms: float, probe: Probe, push: Any) -> list[float]:
    """Push tuples 1..n one at a time (a random pause before each) and return their latencies."""
    lat: list[float] = []
    for i in range(1, n + 1):
        time.sleep(random.uniform(0, gap_ms) / 1000)
        push(i, 1.0 + i % 5)
        got = probe.wait(i)
        if got is None:
            print(f"  !! tuple {i} did not reach the sink")
            break
        lat.append(got - probe.sent[i])
    return lat


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
        lat = _measure(n, gap_ms, probe, push)
        means = progress_means(query.recentProgress)
    finally:
        query.stop()
    return lat, means, start_s


class Hops:
    """``--hops``: where one tuple's time goes in the fused topology, hop by hop, from wall-clock marks.

    The bench process wraps (for this run only) the journal's HEAD write, PySpark's foreachBatch entry
    and exit, the driver's journal read and ``DriverPipeline.run_batch``; Spark's progress report of each
    batch gives its trigger start (``timestamp``) and phases. Per tuple: emit → HEAD written (the source's
    commit: log, HEAD, fsyncs) → trigger start (Spark's polling, or the previous batch still running) →
    foreachBatch called (latestOffset, offset log write, planning, the sink's own planning of the
    batch) → rows read → pipeline run (snapshot saved) → sink written; and after the sink, the batch's
    end (commit log), which delays a tuple only when the next one arrives meanwhile."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float, int]] = []  # (what, wall time, seq or batch id)

    def mark(self, what: str, key: int) -> None:
        self.marks.append((what, time.time(), key))

    def install(self) -> None:
        import pyspark.sql.utils as pu
        from sbpy.bql.spark import driver_query as dq
        from sbpy.bql.spark import journal_format as jf

        write_head, call, read, run = jf.write_head, pu.ForeachBatchFunction.call, dq.journal_batch_rows, \
            dq.DriverPipeline.run_batch

        def timed_head(d: Any, seq: int, *a: Any, **k: Any) -> None:
            write_head(d, seq, *a, **k)
            self.mark("head", seq)

        def timed_call(fn: Any, jdf: Any, batch_id: int) -> None:
            self.mark("foreachBatch", batch_id)
            try:
                call(fn, jdf, batch_id)
            finally:
                self.mark("exit", batch_id)

        def timed_read(*a: Any) -> list[tuple]:
            rows = read(*a)
            self.mark("read", 0)
            return rows

        def timed_run(runner: Any, batch_id: int, rows: Any) -> list[tuple]:
            out = run(runner, batch_id, rows)
            self.mark("pipeline", batch_id)
            return out

        jf.write_head, pu.ForeachBatchFunction.call = timed_head, timed_call
        dq.journal_batch_rows, dq.DriverPipeline.run_batch = timed_read, timed_run

    def report(self, sent: dict[int, float], seen: dict[int, float], progress: list[dict[str, Any]]) -> None:
        """Median ms of each hop over the tuples (``sent``/``seen``: perf_counter times by tuple id)."""
        import datetime as dt

        shift = time.time() - time.perf_counter()
        starts = {p["batchId"]: dt.datetime.fromisoformat(p["timestamp"]).timestamp() for p in progress}
        ends = {p["batchId"]: starts[p["batchId"]] + p["durationMs"].get("triggerExecution", 0) / 1000
                for p in progress}
        hops: dict[str, list[float]] = {}
        for i, t_sent in sent.items():
            if i == 0 or i not in seen:
                continue
            t0, t_sink = t_sent + shift, seen[i] + shift
            after = [m for m in self.marks if t0 <= m[1] <= t_sink]
            head = next((m for m in after if m[0] == "head"), None)
            call = next((m for m in after if m[0] == "foreachBatch"), None)
            if head is None or call is None or call[2] not in starts:
                continue
            b = call[2]
            read = next((m for m in after if m[0] == "read" and m[1] >= call[1]), call)
            run = next((m for m in after if m[0] == "pipeline" and m[2] == b), read)
            points = [("emit → HEAD written", head[1]), ("HEAD → trigger start", max(head[1], starts[b])),
                      ("trigger start → foreachBatch", call[1]), ("foreachBatch → rows read", read[1]),
                      ("rows → pipeline done", run[1]), ("pipeline → sink written", t_sink)]
            prev = t0
            for name, t in points:
                hops.setdefault(name, []).append((t - prev) * 1000)
                prev = t
            hops.setdefault("(after) sink → batch end", []).append((ends[b] - t_sink) * 1000)
        print("\nwhere one tuple's time goes (fused, median ms over the tuples):")
        print(benchlib.table(("hop", "p50 ms", "mean ms"), [
            (name, statistics.median(v), statistics.mean(v)) for name, v in hops.items()]))


REFERENCE = "PySpark: json file source → filter → project → foreachBatch"


def variants(forms: list[str], reads: list[str]) -> list[tuple[str, str | None, str | None]]:
    """``(label, form, driver read)`` of every measured path; the reference's form is None."""
    out: list[tuple[str, str | None, str | None]] = [(REFERENCE, None, None)]
    for form in forms:
        for read in reads:
            queries = "1 query" if form == "fused" else "2 queries"
            out.append((f"sbpy {form} ({queries}), driver read: {read}", form, read))
    return out


def hops_only(a: argparse.Namespace) -> None:
    print(f"B2 hops: the fused topology, {a.n} tuples; {benchlib.load_note()}")
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b2-"))
    ctx = benchlib.server_context(tmp / "data", a.master, a.conf)
    hops = Hops()
    try:
        benchlib.start_session(ctx)
        hops.install()
        lat = sbpy_topology(ctx, a.n, a.gap_ms, "fused", "b2hops", hops)[0]
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    s = benchlib.summary_ms(lat)
    print(f"latency p50 {s['p50']:.0f} ms, p99 {s['p99']:.0f} ms; {benchlib.load_note()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=60, help="tuples measured per path and round")
    ap.add_argument("--gap-ms", type=float, default=100, help="max random pause between tuples")
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds of every path")
    ap.add_argument("--forms", default="fused,eager", help="sbpy topologies to measure: fused, eager")
    ap.add_argument("--driver-read", default="journal", help="driver reads to measure: journal, spark")
    ap.add_argument("--hops", action="store_true",
                    help="only the fused topology (journal read), with where each tuple's time goes (Hops)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting for the session (repeatable), as sensorbee.yaml's spark.conf")
    a = ap.parse_args()
    if a.hops:
        hops_only(a)
        return
    paths = variants([f for f in a.forms.split(",") if f], [r for r in a.driver_read.split(",") if r])
    print(f"B2: one tuple through source → 2 streams → sink, {a.n} tuples × {a.rounds} rounds; "
          f"{benchlib.load_note()}" + (f"\nextra conf: {a.conf}" if a.conf else ""))
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b2-"))
    ctx = benchlib.server_context(tmp / "data", a.master, a.conf)
    lat: dict[str, list[float]] = {label: [] for label, _, _ in paths}
    means: dict[str, dict[str, float]] = {}
    start: dict[str, float] = {}
    saved_read = os.environ.get("SBPY_DRIVER_READ")
    try:
        spark = benchlib.start_session(ctx)
        for r in range(a.rounds):
            for k, (label, form, read) in enumerate(paths):
                if form is None:
                    got = reference(spark, Path(tempfile.mkdtemp(dir=tmp)), a.n, a.gap_ms)
                else:
                    os.environ["SBPY_DRIVER_READ"] = str(read)
                    got = sbpy_topology(ctx, a.n, a.gap_ms, form, f"b2r{r}v{k}")
                lat[label].extend(got[0])
                means[label] = got[1]
                start.setdefault(label, got[2])
                s = benchlib.summary_ms(got[0])
                print(f"  round {r + 1}: {label}: p50 {s['p50']:.0f} ms, p99 {s['p99']:.0f} ms; "
                      f"{benchlib.load_note()}", flush=True)
    finally:
        if saved_read is None:
            os.environ.pop("SBPY_DRIVER_READ", None)
        else:
            os.environ["SBPY_DRIVER_READ"] = saved_read
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {label: benchlib.summary_ms(v) for label, v in lat.items() if v}
    ref = summary[REFERENCE]
    print()
    print(benchlib.table(("path", "p50 ms", "p99 ms", "min ms", "max ms", "start→1st tuple s"), [
        (label, s["p50"], s["p99"], s["min"], s["max"], start[label]) for label, s in summary.items()]))
    for label, s in summary.items():
        if label != REFERENCE:
            print(f"ratio sbpy / PySpark: p50 {s['p50'] / ref['p50']:.2f}×, p99 {s['p99'] / ref['p99']:.2f}× — {label}")
    keys = sorted({k for m in means.values() for k in m})
    print("\nmean micro-batch durationMs (batches with input; sbpy: the sink's query, last round):")
    labels = list(summary)
    print(benchlib.table(("phase", *[f"path {i + 1}" for i in range(len(labels))]),
                         [(k, *[means.get(label, {}).get(k, 0.0) for label in labels]) for k in keys]))
    print("  " + "; ".join(f"path {i + 1}: {label}" for i, label in enumerate(labels)))


if __name__ == "__main__":
    main()
