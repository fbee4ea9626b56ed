"""B1 — ``SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8`` over N JSONL lines.

sbpy runs it the way a topology does: the ``file`` source journals the file by reference (segments),
the planner makes the memoryless query *stateless* (``sbpy_stateless``: the journal read in seq-range
partitions with the stage running there, on every core, the sink's JSON lines encoded there →
``foreachBatch`` appending them in arrival order) and a ``file`` sink. The sbpy figure is a real
``Topology`` (CREATE PAUSED SOURCE / STREAM / SINK / INSERT INTO / RESUME), timed from RESUME until
the stream has stopped and the sink holds every output. ``--query-only`` also times the planned query
alone once over the journal the last round wrote (Spark's summed ``triggerExecution``).

The reference, in the same SparkSession, is the best hand-written PySpark job for the same work: a
streaming query with the JSON source and an explicit schema (the fastest parse measured in
spark-facts.md), ``price < 8``, the projection, a JSON file sink and ``trigger(availableNow)`` (also
incremental, checkpointed, exactly-once output), the input split into ~32 MB partitions so it uses
both cores, as a hand-tuned job would.

Both sides are warmed the same way (one untimed run of each over a small file) and then run in
alternating rounds (``--rounds``, default 3) over the same input; the table shows medians and the
ratio of medians, and every round checks that sbpy's sink file and the reference's output hold the
same rows ``(id, price)`` (as multisets; sbpy's also in input order).

Run: ``.venv/bin/python bench/b1_filter.py [--rows 2000000] [--rounds 3] [--master local[2]]``.
Prints a table; never asserts timings.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

QUERY = "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8"
# ``--shape``: the statement and the hand-written job's filter and projection (Spark SQL); every shape
# keeps the same rows as B1's (price * 2 + 1 < 17 is price < 8 on the generated prices), so the row
# checks and the expected count hold
SHAPES = {
    "b1": (QUERY, "price < 8", ["id", "price"]),
    "arith": ("SELECT RSTREAM id, price * 1.1 AS price FROM src [RANGE 1 TUPLES] WHERE price * 2 + 1 < 17",
              "price * 2 + 1 < 17", ["id", "price * 1.1 AS price"]),
    "func": (("SELECT RSTREAM id, abs(price - 20) AS price FROM src [RANGE 1 TUPLES] WHERE floor(price) < 8 "
              "AND id::float >= 0"), "floor(price) < 8 AND CAST(id AS double) >= 0", ["id", "abs(price - 20) AS price"]),
    "star": ("SELECT RSTREAM * FROM src [RANGE 1 TUPLES] WHERE price < 8", "price < 8", ["*"]),
}
REF_WHERE, REF_SELECT = SHAPES["b1"][1], SHAPES["b1"][2]
SCHEMA = "id long, price double, name string, k long, unit string, note string"


def read_rows(out: Path) -> list[tuple[int, float]]:
    """``(id, price)`` of every JSON line under ``out`` (a file, or a folder of part files), in order."""
    import orjson

    files = [out] if out.is_file() else sorted(out.glob("part-*"))
    rows = []
    for f in files:
        for line in f.read_bytes().splitlines():
            if line.strip():
                d = orjson.loads(line)
                rows.append((d["id"], float(d["price"])))
    return rows


def reference_streaming(spark: Any, src_dir: Path, out: Path, ck: Path) -> float:
    """The hand-written streaming job over ``src_dir``; seconds from start to the end of its output."""
    prev = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(32 * 1024 * 1024))
    try:
        t0 = time.perf_counter()
        q = (spark.readStream.schema(SCHEMA).json(str(src_dir)).where(REF_WHERE).selectExpr(*REF_SELECT)
             .writeStream.format("json").option("path", str(out)).option("checkpointLocation", str(ck))
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination()
        finally:
            q.stop()
        return time.perf_counter() - t0
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", prev)


def sbpy_topology(ctx: Any, src: Path, out: Path, expected: int, timeout: float, name: str = "b1") -> dict[str, Any]:
    from sbpy.bql.parser import parse_script
    from sbpy.server.nodes.source_node import wait_until
    from sbpy.server.topology import Topology

    t = Topology(name, ctx)
    res: dict[str, Any] = {}
    try:
        for p in parse_script(f"""
                CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";
                CREATE STREAM out AS {QUERY};
                CREATE SINK k TYPE file WITH path = "{out}", truncate = true;
                INSERT INTO k FROM out;"""):
            t.execute(p)
        consumer = t.consumers["k"]
        # let the query finish its start-up (first, empty trigger) so RESUME times the work only
        wait_until(lambda: consumer.handle is not None and consumer.handle.last_progress is not None,
                   120, 0.05)
        handle = consumer.handle
        (resume,) = parse_script("RESUME SOURCE src;")
        t0 = time.perf_counter()
        t.execute(resume)
        src_done = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if src_done is None and t.node("source", "src")["state"] == "stopped":
                src_done = time.perf_counter() - t0
            if t.node("stream", "out")["state"] == "stopped":
                break
            time.sleep(0.05)
        res["seconds"] = time.perf_counter() - t0
        res["source_seconds"] = src_done
        res["rows_out"] = t.node("sink", "k")["status"]["input_stats"]["num_received_total"]
        res["batches"] = handle.batches
        res["tier"] = handle.tier or "/".join(sorted({s.tier.value for s in consumer.plan.stages}))
        res["journal_dir"] = Path(t.journal.dir)
        if res["rows_out"] != expected:
            print(f"  !! topology: sink received {res['rows_out']}, expected {expected}")
    finally:
        t.stop()
    return res


def sbpy_query_only(spark: Any, journal_dir: Path, out: Path, ck: Path, max_seqs: int) -> dict[str, Any]:
    from sbpy.bql.plan import plan_query
    from sbpy.bql.spark.compile import query_spec_stages
    from sbpy.bql.spark.query import QuerySpec
    from sbpy.plugins.builtin.sinks import FileSink

    sink = FileSink({"path": str(out), "truncate": True})
    count = [0]

    def on_batch(batch_id: int, batch: Any) -> None:  # the stateless execution's EncodedBatch
        sink.write_json_lines(batch.lines, ("b1.q", int(batch_id)))
        count[0] += len(batch.lines)

    plan = plan_query(["src"], [("out", QUERY, ["src"])])
    spec = QuerySpec("b1.q", journal_dir, ("src",), query_spec_stages(plan), ck,
                     on_batch=on_batch, max_seqs=max_seqs, plan=plan, out_format="json")
    try:
        wall, progress = benchlib.run_to_end(spark, spec)
    finally:
        sink.close()
    busy = benchlib.trigger_seconds(progress)
    return {"seconds": busy, "wall": wall, "rows_out": count[0], "batches": len(progress)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting for the session (repeatable), as sensorbee.yaml's spark.conf")
    ap.add_argument("--max-seqs", type=int, default=0, help="cap per micro-batch for the query-only run")
    ap.add_argument("--query-only", action="store_true", help="also time the planned query alone, once")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="b1",
                    help="arith: arithmetic in WHERE and the select list; star: SELECT *; func: functions and a cast "
                         "(same rows as B1)")
    ap.add_argument("--tier", choices=("auto", "vectorized"), default="auto",
                    help="vectorized: keep the stateless chain off the native tier (SBPY_NATIVE=0)")
    a = ap.parse_args()
    global QUERY, REF_WHERE, REF_SELECT
    QUERY, REF_WHERE, REF_SELECT = SHAPES[a.shape]
    if a.tier == "vectorized":
        os.environ["SBPY_NATIVE"] = "0"
    n = a.rows
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b1-"))
    print(f"B1: {QUERY}\n{n:,} JSONL lines; master {a.master}; {a.rounds} alternating rounds; "
          f"{benchlib.load_note()}" + (f"\nextra conf: {a.conf}" if a.conf else ""))
    src_dir = tmp / "in"
    src = src_dir / "rows.jsonl"
    size = benchlib.write_jsonl(src, n)
    expected = benchlib.expected_filter_count(n)
    print(f"input {size / 1e6:.0f} MB ({size / n:.0f} B/line), {expected:,} rows pass the filter")
    warm_dir = tmp / "warm"
    benchlib.write_jsonl(warm_dir / "w.jsonl", 20_000)
    warm_expected = benchlib.expected_filter_count(20_000)

    ctx = benchlib.server_context(tmp / "data", a.master, a.conf)
    times: dict[str, list[float]] = {"ref": [], "topo": []}
    mismatches = 0
    only = None
    try:
        spark = benchlib.start_session(ctx)
        # warm-up, not timed: one run of each side over a small file
        reference_streaming(spark, warm_dir, tmp / "warm-ref", tmp / "warm-ck")
        sbpy_topology(ctx, warm_dir / "w.jsonl", tmp / "warm-sbpy.jsonl", warm_expected, a.timeout, "b1w")
        for r in range(a.rounds):
            order = ("ref", "topo") if r % 2 == 0 else ("topo", "ref")
            outs: dict[str, Path] = {}
            for side in order:
                if side == "ref":
                    outs[side] = tmp / f"ref-out-{r}"
                    times[side].append(reference_streaming(spark, src_dir, outs[side], tmp / f"ref-ck-{r}"))
                else:
                    outs[side] = tmp / f"sbpy-out-{r}.jsonl"
                    res = sbpy_topology(ctx, src, outs[side], expected, a.timeout, f"b1r{r}")
                    times[side].append(res["seconds"])
                    tier = f"{res['tier']}, {res['batches']} batches"
                    journal = res["journal_dir"]
            sbpy_rows, ref_rows = read_rows(outs["topo"]), read_rows(outs["ref"])
            in_order = sbpy_rows == sorted(sbpy_rows)
            same = len(sbpy_rows) == expected and sorted(ref_rows) == sorted(sbpy_rows)
            mismatches += (not same) + (not in_order)
            print(f"round {r + 1}: reference {times['ref'][-1]:.2f} s, sbpy ({tier}) {times['topo'][-1]:.2f} s, "
                  f"ratio {times['ref'][-1] / times['topo'][-1]:.2f}; rows {len(sbpy_rows):,} "
                  f"{'same' if same else 'DIFFERENT'}{'' if in_order else ', sbpy NOT in input order'}; "
                  f"{benchlib.load_note()}")
            shutil.rmtree(outs["ref"], ignore_errors=True)
            outs["topo"].unlink(missing_ok=True)
        if a.query_only:
            only = sbpy_query_only(spark, journal, tmp / "sbpy-q-out.jsonl", tmp / "q-ck", a.max_seqs)
    finally:
        ctx.close()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    ref_med, topo_med = statistics.median(times["ref"]), statistics.median(times["topo"])
    rows = [
        ("PySpark streaming json→filter→json (availableNow), median", ref_med, n / ref_med, 1.0),
        ("sbpy topology: file source→journal→stateless query→file sink, median", topo_med, n / topo_med,
         ref_med / topo_med),
    ]
    if only is not None:
        rows.append(("sbpy planned query only (journal already written), once", only["seconds"],
                     n / only["seconds"], ref_med / only["seconds"]))
    print()
    print(benchlib.table(("path", "seconds", "rows/s", "× streaming ref"), rows))
    if only is not None:
        print(f"(the query alone ran {only['batches']} micro-batch(es) with input)")
    ratios = sorted(t_ref / t_topo for t_ref, t_topo in zip(times["ref"], times["topo"]))
    print(f"\nratio sbpy topology / PySpark streaming reference: {ref_med / topo_med:.3f} (median of medians); "
          f"per round {', '.join(f'{x:.2f}' for x in ratios)}; row checks: "
          f"{'all same' if not mismatches else f'{mismatches} MISMATCHES'}")


if __name__ == "__main__":
    main()
