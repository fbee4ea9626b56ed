"""B8 — Timeplus windows end to end: a topology against the streaming job a PySpark user would write.

Input: ``--rows`` JSON lines ``{"t", "k", "v"}`` in one file (``b4_windows``' rows: ``k`` cycling over
``--keys`` keys, one line per 1 ms of event time in bursts of 20 s and 6 s of silence; ``t`` in epoch
seconds). Per form (tumble 10 s, hop 10 s / 5 s, session gap 5 s), ``count(*)`` and ``sum(v)`` per key and
window, AFTER WATERMARK (delay 0):

- *sbpy*: a topology as ``sbpy run`` builds it — ``CREATE PAUSED SOURCE src TYPE file`` →
  ``CREATE STREAM w AS SELECT RSTREAM k, count(*) AS n, sum(v) AS total, window_start FROM
  tumble(src, t, 10s) GROUP BY k, window_start`` → ``file`` sink; the stream's query started and idle,
  then timed from ``RESUME SOURCE`` until the stream stops (the source's end reaches it and it emits its
  last windows), wall clock;
- *PySpark*: ``readStream.schema(...).json(folder)`` → ``withWatermark(ts, "0 seconds")`` →
  ``groupBy(window(ts, ...) | session_window(ts, ...), k).agg(count, sum)`` → ``writeStream.format("json")``,
  append mode, ``trigger(availableNow=True)``, in the same SparkSession: wall clock from ``start()`` to its
  end, and Spark's busy time (``triggerExecution`` summed, without the query's start-up).

Both sides are warmed on the first 20k lines first; rounds alternate the two. Rows: Spark emits the windows
the final watermark closed; sbpy emits those too and, at the end of its input, the windows still open —
the check is that the (k, window_start, count) rows of the windows Spark closed are the same on both
sides. rows/s = input lines / seconds.

Run: ``python bench/b8_topology_windows.py [--rows 300000] [--keys 1000] [--rounds 3] [--forms tumble,hop,session]``.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402
import b4_windows  # noqa: E402

FORMS = {  # name: (BQL FROM item, Spark window over column ts)
    "tumble": ("tumble(src, t, 10s)", ("window", "10 seconds")),
    "hop": ("hop(src, t, 5s, 10s)", ("window", "10 seconds", "5 seconds")),
    "session": ("session(src, t, 5s)", ("session_window", "5 seconds")),
}
QUERY = "SELECT RSTREAM k, count(*) AS n, sum(v) AS total, window_start FROM {src} GROUP BY k, window_start"


def write_input(folder: Path, rows: list[tuple[int, int, float]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "in.jsonl"
    with open(path, "wb") as f:
        f.write(b"".join(orjson.dumps({"t": ts / 1e6, "k": k, "v": v}) + b"\n" for ts, k, v in rows))
    return path


def run_sbpy(ctx: Any, name: str, form: str, src: Path, out: Path) -> dict[str, Any]:
    from sbpy.bql.parser import parse_script
    from sbpy.server.nodes.source_node import wait_until
    from sbpy.server.topology import Topology

    topo = Topology(name, ctx)
    try:
        for stmt in parse_script(f"""
                CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";
                CREATE STREAM w AS {QUERY.format(src=FORMS[form][0])};
                CREATE SINK k TYPE file WITH path = "{out}", truncate = true;
                INSERT INTO k FROM w;"""):
            topo.execute(stmt)
        consumer = topo.consumers["k"]
        wait_until(lambda: consumer.handle is not None and consumer.handle.last_progress is not None, 120, 0.05)
        (resume,) = parse_script("RESUME SOURCE src;")
        t0 = time.perf_counter()
        topo.execute(resume)
        while topo.node("stream", "w")["state"] != "stopped":
            if time.perf_counter() - t0 > 600:
                raise TimeoutError(f"sbpy {form}: the stream did not stop within 600 s")
            time.sleep(0.01)
        seconds = time.perf_counter() - t0
        wait_until(lambda: topo.node("sink", "k")["status"]["input_stats"]["num_received_total"]
                   == topo.node("stream", "w")["status"]["output_stats"]["num_sent_total"], 60, 0.01)
        execution = consumer.plan.execution.value
    finally:
        topo.stop()
    rows = {(r["k"], float(r["window_start"]), r["n"]) for r in map(orjson.loads, out.read_bytes().splitlines())}
    return {"seconds": seconds, "rows": rows, "execution": execution}


def run_spark(spark: Any, form: str, folder: Path, out: Path, ck: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    kind, *args = FORMS[form][1]
    df = (spark.readStream.schema("t double, k long, v double").json(str(folder))
          .withColumn("ts", F.timestamp_seconds("t")))
    win = getattr(F, kind)("ts", *args)
    agg = (df.withWatermark("ts", "0 seconds").groupBy(win.alias("w"), "k")
           .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))
           .select("k", F.unix_micros(F.col("w.start")).alias("start_us"), "n", "total"))
    t0 = time.perf_counter()
    query = (agg.writeStream.outputMode("append").format("json").option("path", str(out))
             .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
        seconds = time.perf_counter() - t0
        busy = benchlib.trigger_seconds(query.recentProgress)
    finally:
        query.stop()
    rows = {(r["k"], r["start_us"] / 1e6, r["n"]) for r in spark.read.json(str(out)).collect()}
    return {"seconds": seconds, "busy": busy, "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--forms", default="tumble,hop,session")
    ap.add_argument("--master", default="local[2]")
    a = ap.parse_args()
    from sbpy.server.context import ServerContext

    forms = [f.strip() for f in a.forms.split(",") if f.strip()]
    print(f"B8: Timeplus windows, file → stream → file, {a.rows:,} lines, {a.keys:,} keys; {benchlib.load_note()}")
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b8-"))
    ctx = ServerContext(data_dir=tmp / "data", master=a.master)
    try:
        spark = ctx.spark()
        spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "true")
        data = b4_windows.rows_of(a.rows, a.keys)
        src = write_input(tmp / "in", data)
        warm = write_input(tmp / "warm", data[:20_000])
        results: dict[str, dict[str, list]] = {f: {"sbpy": [], "spark": [], "busy": []} for f in forms}
        same: dict[str, bool] = {}
        for form in forms:  # warm both sides (JIT, Python workers, imports)
            run_sbpy(ctx, f"warm-{form}", form, warm, tmp / f"warm-{form}.jsonl")
            run_spark(spark, form, warm.parent, tmp / f"warm-spark-{form}", tmp / f"ck-warm-{form}")
        for r in range(a.rounds):
            for form in forms:
                order = ("sbpy", "spark") if r % 2 == 0 else ("spark", "sbpy")
                for side in order:
                    if side == "sbpy":
                        ours = run_sbpy(ctx, f"b8-{form}-{r}", form, src, tmp / f"out-{form}-{r}.jsonl")
                        results[form]["sbpy"].append(ours["seconds"])
                    else:
                        ref = run_spark(spark, form, src.parent, tmp / f"spark-{form}-{r}", tmp / f"ck-{form}-{r}")
                        results[form]["spark"].append(ref["seconds"])
                        results[form]["busy"].append(ref["busy"])
                spark_windows = {(k, start) for k, start, _ in ref["rows"]}  # the windows Spark closed
                closed = {row for row in ours["rows"] if row[:2] in spark_windows}
                same[form] = same.get(form, True) and closed == ref["rows"] and len(ref["rows"]) > 0
                print(f"  round {r} {form} ({ours['execution']}): sbpy {ours['seconds']:.2f} s, PySpark "
                      f"{ref['seconds']:.2f} s ({ref['busy']:.2f} s busy); {benchlib.load_note()}", flush=True)
        table = []
        for form in forms:
            s, p, b = (statistics.median(results[form][k]) for k in ("sbpy", "spark", "busy"))
            table.append((form, a.rows / s, a.rows / p, a.rows / b, p / s, b / s, "yes" if same[form] else "NO"))
        print()
        print(benchlib.table(("form", "sbpy rows/s", "PySpark rows/s", "PySpark busy rows/s", "sbpy/PySpark",
                              "sbpy/PySpark busy", "same rows"), table))
        print("\n(medians of the rounds; sbpy: wall clock from RESUME SOURCE to the stream's end; PySpark: wall "
              "clock from start() to its end, and its busy time without the query's start-up)")
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
