"""B4 — Timeplus windows on Spark: tumble 10 s, hop 10 s / 5 s, session gap 5 s over the same input.

Input: ``--rows`` tuples ``{"k", "v"}``, ``k`` cycling over the keys, one tuple per 1 ms of event time in
bursts of 20 s followed by 6 s of silence (so sessions end); the event time is the tuple timestamp and
never goes back (nothing is late). Every form is ``count(*)`` and ``sum(v)`` per key and window, emitted
AFTER WATERMARK (delay 0); the input is left open (no end marker) so neither side flushes at the end.

- *ours*: the query as a BQL stage, ``max_seqs`` 50 000 per micro-batch, in each execution of ``--modes``
  (forced where the planner allows it): ``sequential`` (the fused operator: journal →
  ``applyInPandasWithState`` → ``foreachBatch``, one state partition) and ``keyed`` (tumble/hop: the
  ordered router, buckets of windows by ``k``, the session's shuffle partitions as buckets; session windows
  stay sequential).
- *Spark*: the hand-written **streaming** equivalent in the same SparkSession — parquet files of 50 000
  rows read with ``maxFilesPerTrigger=1``, ``withWatermark("ts", "0 seconds")``,
  ``groupBy(window(ts, "10 seconds"[, "5 seconds"]) | session_window(ts, "5 seconds"), k)``, append mode,
  ``foreachBatch`` collecting the rows to the driver like ours; no-data micro-batches on (the last
  watermark batch emits the windows closed by the final watermark, which is what ours emitted per tuple).

rows/s = rows / Spark busy time (sum of ``triggerExecution`` over the query's micro-batches, query start
excluded; with ``--repeat n`` the fastest of n runs). Both sides must emit the same (k, window_start,
count) rows; the table says whether they did. Then the curve of our operator at 10 / 1 000 / 10 000
keys (every form runs in our operator). Takes about 4–8 minutes at the defaults on a busy 2-CPU machine.

Run: ``/work/venv/bin/python bench/b4_windows.py [--rows 100000] [--keys 1000] [--curve 10,1000,10000] [--repeat 1]
[--modes sequential,keyed]``.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

BATCH = 50_000
STEP_US = 1_000  # event time between consecutive tuples
BURST_US, SILENCE_US = 20_000_000, 6_000_000
T0_US = 1_700_000_000_000_000  # a multiple of 10 s

def _forms() -> dict[str, tuple[str, Callable[[], Any]]]:
    from pyspark.sql import functions as F

    return {
        "tumble 10 s": ("tumble(src, 10 SECONDS)", lambda: F.window("ts", "10 seconds")),
        "hop 10 s / 5 s": ("hop(src, 5 SECONDS, 10 SECONDS)", lambda: F.window("ts", "10 seconds", "5 seconds")),
        "session gap 5 s": ("session(src, 5 SECONDS)", lambda: F.session_window("ts", "5 seconds")),
    }


def event_us(i: int) -> int:
    t = i * STEP_US
    return T0_US + t + (t // BURST_US) * SILENCE_US


def rows_of(n: int, keys: int) -> list[tuple[int, int, float]]:
    """``(ts_us, k, v)`` per tuple."""
    return [(event_us(i), i % keys, float(i % 97)) for i in range(n)]


def _busy_s(query: Any) -> tuple[float, int]:
    prog = list(query.recentProgress)
    return sum(p["durationMs"].get("triggerExecution", 0) for p in prog) / 1000, len(prog)


# ---------------------------------------------------------------- ours


def run_ours(spark: Any, tmp: Path, name: str, from_item: str, data: list[tuple[int, int, float]],
             execution: str = "sequential") -> dict[str, Any]:
    from sbpy.bql.plan import Execution, plan_query
    from sbpy.bql.spark.operator import StageSpec
    from sbpy.bql.spark.compile import start_planned
    from sbpy.bql.spark.query import QuerySpec
    from sbpy.server.journal import JournalWriter

    jdir = tmp / f"journal-{name}"
    journal = JournalWriter(jdir)
    for start in range(0, len(data), 10_000):
        journal.append("src", [(ts, {"k": k, "v": v}) for ts, k, v in data[start:start + 10_000]])
    query = (f"SELECT RSTREAM k, count(*) AS n, sum(v) AS total, window_start FROM {from_item} "
             "GROUP BY k, window_start")
    got: list[tuple] = []

    def on_batch(batch_id: int, rows: list[dict[str, Any]]) -> None:
        got.extend((r["data"]["k"], r["data"]["window_start"], r["data"]["n"]) for r in rows if r["kind"] == "out")

    plan = plan_query(["src"], [("w", query, ["src"])], force=Execution(execution))  # keyed: where allowed
    spec = QuerySpec(f"b4.{name}", jdir, ("src",), [StageSpec("w", query, ("src",))], tmp / f"ck-{name}",
                     on_batch=on_batch, max_seqs=BATCH, plan=plan)
    handle = start_planned(spark, spec)  # as the server starts it: the plan's execution decides the Spark work
    try:
        handle.process_all_available()
        busy, batches = _busy_s(handle._query)
    finally:
        handle.stop()
    return {"busy": busy, "batches": batches, "rows": got, "execution": plan.execution.value}


# ---------------------------------------------------------------- hand-written Spark


def write_parquet(folder: Path, data: list[tuple[int, int, float]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    for n, start in enumerate(range(0, len(data), BATCH)):
        part = data[start:start + BATCH]
        table = pa.table({"k": pa.array([r[1] for r in part], pa.int64()),
                          "v": pa.array([r[2] for r in part], pa.float64()),
                          "ts": pa.array([r[0] for r in part], pa.timestamp("us", tz="UTC"))})
        pq.write_table(table, folder / f"part-{n:05d}.parquet")


def _bound(us: int) -> int | float:
    """Epoch µs as BQL's ``window_start`` (epoch seconds, int when whole)."""
    return us // 1_000_000 if us % 1_000_000 == 0 else us / 1_000_000


def run_spark(spark: Any, tmp: Path, name: str, window: Callable[[], Any], folder: Path) -> dict[str, Any]:
    from pyspark.sql import functions as F

    df = (spark.readStream.schema("k long, v double, ts timestamp").option("maxFilesPerTrigger", 1)
          .parquet(str(folder)))
    win = window()
    agg = (df.withWatermark("ts", "0 seconds").groupBy(win.alias("w"), "k")
           .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))
           .select("k", F.unix_micros(F.col("w.start")).alias("start_us"), "n", "total"))
    got: list[tuple] = []

    def bridge(batch_df: Any, batch_id: int) -> None:
        got.extend((r["k"], _bound(r["start_us"]), r["n"]) for r in batch_df.toArrow().to_pylist())

    key = "spark.sql.streaming.noDataMicroBatches.enabled"
    previous = spark.conf.get(key, None)
    spark.conf.set(key, "true")  # cloned by the query at start
    try:
        query = (agg.writeStream.outputMode("append").option("checkpointLocation", str(tmp / f"ck-spark-{name}"))
                 .foreachBatch(bridge).start())
    finally:
        spark.conf.unset(key) if previous is None else spark.conf.set(key, previous)
    try:
        query.processAllAvailable()
        busy, batches = _busy_s(query)
    finally:
        query.stop()
    return {"busy": busy, "batches": batches, "rows": got}


# ---------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--keys", type=int, default=1000, help="keys of the comparison against Spark")
    ap.add_argument("--curve", default="10,1000,10000", help="key counts of our operator's curve ('' skips)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per measurement (the fastest counts)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--forms", default="", help="only these forms (tumble,hop,session; '' = all)")
    ap.add_argument("--modes", default="sequential,keyed",
                    help="our executions to measure (forced where the planner allows; session stays sequential)")
    a = ap.parse_args()
    from sbpy.server.context import ServerContext

    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b4-"))
    ctx = ServerContext(data_dir=tmp / "data", master=a.master)
    print(f"B4: Timeplus windows, {a.rows:,} rows; {benchlib.load_note()}")
    try:
        spark = ctx.spark()
        forms = {n: f for n, f in _forms().items() if not a.forms or n.split()[0] in a.forms.split(",")}
        data = rows_of(a.rows, a.keys)
        folder = tmp / "parquet"
        write_parquet(folder, data)
        # warm-up: the first queries of a session pay JVM/Python worker start-up and code generation
        write_parquet(tmp / "parquet-warm", data[:10_000])
        for name, (from_item, window) in forms.items():
            run_ours(spark, tmp, f"warm-{name.split()[0]}", from_item, data[:10_000])
            run_spark(spark, tmp, f"warm-{name.split()[0]}", window, tmp / "parquet-warm")
        modes = [m.strip() for m in a.modes.split(",") if m.strip()]
        table = []
        for name, (from_item, window) in forms.items():
            slug = name.split()[0]
            runs: dict[str, list] = {m: [] for m in modes}
            refs = []
            for r in range(a.repeat):  # the modes and Spark alternate within each round
                for m in modes:
                    runs[m].append(run_ours(spark, tmp, f"{slug}-{a.keys}-{m}-{r}", from_item, data, m))
                refs.append(run_spark(spark, tmp, f"{slug}-{r}", window, folder))
            ref = min(refs, key=lambda x: x["busy"])
            for m in modes:
                ours = min(runs[m], key=lambda x: x["busy"])
                same = sorted(ours["rows"]) == sorted(ref["rows"])
                r_ours, r_ref = a.rows / ours["busy"], a.rows / ref["busy"]
                table.append((name, ours["execution"], r_ours, r_ref, r_ours / r_ref, len(ours["rows"]),
                              len(ref["rows"]), "yes" if same else "NO", f"{ours['batches']}/{ref['batches']}"))
                print(f"  {name} [{ours['execution']}]: ours {ours['busy']:.1f} s busy, Spark {ref['busy']:.1f} s busy")
        print()
        print(f"{a.keys:,} keys, same input; ours = our query in the execution shown (keyed where the planner "
              "allows it), Spark = hand-written streaming window() / session_window() aggregation, same session")
        print(benchlib.table(("form", "execution", "ours rows/s", "Spark rows/s", "ours/Spark", "ours out",
                              "Spark out", "same rows", "batches"), table))
        curve_keys = [int(x) for x in a.curve.split(",") if x.strip()]
        if curve_keys:
            curve = []
            for name, (from_item, _) in forms.items():
                slug = name.split()[0]
                line: list[Any] = [name]
                for keys in curve_keys:
                    res = min((run_ours(spark, tmp, f"{slug}-curve-{keys}-{r}", from_item, rows_of(a.rows, keys),
                                        modes[-1]) for r in range(a.repeat)), key=lambda x: x["busy"])
                    line += [a.rows / res["busy"], len(res["rows"])]
                curve.append(line)
            header = ["form"]
            for keys in curve_keys:
                header += [f"{keys:,} keys rows/s", "out"]
            print()
            print(f"our query ({modes[-1]} where allowed) by number of keys (same rows and event times)")
            print(benchlib.table(header, curve))
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
