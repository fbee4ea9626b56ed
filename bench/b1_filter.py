"""B1 — ``SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8`` over N JSONL lines.

sbpy runs it the way a topology does: the ``file`` source journals the file by reference (segments),
the planner makes the memoryless query *stateless* (``sbpy_journal`` read in seq-range partitions →
``mapInArrow`` running the stage on every core, the sink's JSON lines encoded there → ``foreachBatch``
appending them in arrival order) and a ``file`` sink. Two sbpy figures:

* **topology**: a real ``Topology`` (CREATE PAUSED SOURCE / STREAM / SINK / INSERT INTO / RESUME),
  timed from RESUME until the stream has stopped and the sink holds every output;
* **query only**: the same planned query started again over the journal the topology wrote (the
  source's journaling excluded), timed by Spark's own progress (sum of ``triggerExecution``).

Reference, in the same SparkSession: the best hand-written PySpark job for the same work —
the JSON source with an explicit schema (the fastest parse measured in spark-facts.md), ``price < 8``,
the projection, written as JSON files. Two forms: a **streaming** query with ``trigger(availableNow)``
and a file sink (the like-for-like reference: also incremental, checkpointed, exactly-once output) and
the **batch** job (the ceiling: no streaming bookkeeping). Both split the input into ~32 MB partitions
so they use both cores, as a hand-tuned job would.

Run: ``/work/venv/bin/python bench/b1_filter.py [--rows 2000000] [--master local[2]]``.
Prints a table; never asserts timings (it does check that every path produced the same row count).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

QUERY = "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8"
SCHEMA = "id long, price double, name string, k long, unit string, note string"


def reference_batch(spark: Any, src: Path, out: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    (spark.read.schema(SCHEMA).json(str(src)).where("price < 8").select("id", "price")
     .write.mode("overwrite").json(str(out)))
    dt = time.perf_counter() - t0
    return dt, spark.read.schema("id long, price double").json(str(out)).count()


def reference_streaming(spark: Any, src_dir: Path, out: Path, ck: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    q = (spark.readStream.schema(SCHEMA).json(str(src_dir)).where("price < 8").select("id", "price")
         .writeStream.format("json").option("path", str(out)).option("checkpointLocation", str(ck))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination()
    finally:
        q.stop()
    dt = time.perf_counter() - t0
    return dt, spark.read.schema("id long, price double").json(str(out)).count()


def sbpy_topology(ctx: Any, src: Path, out: Path, expected: int, timeout: float) -> dict[str, Any]:
    from sbpy.bql.parser import parse_script
    from sbpy.server.nodes.source_node import wait_until
    from sbpy.server.topology import Topology

    t = Topology("b1", ctx)
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
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting for the session (repeatable), as sensorbee.yaml's spark.conf")
    ap.add_argument("--max-seqs", type=int, default=0, help="cap per micro-batch for the query-only run")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    a = ap.parse_args()
    n = a.rows
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b1-"))
    print(f"B1: {QUERY}\n{n:,} JSONL lines; master {a.master}; {benchlib.load_note()}"
          + (f"\nextra conf: {a.conf}" if a.conf else ""))
    src_dir = tmp / "in"
    src = src_dir / "rows.jsonl"
    size = benchlib.write_jsonl(src, n)
    expected = benchlib.expected_filter_count(n)
    print(f"input {size / 1e6:.0f} MB ({size / n:.0f} B/line), {expected:,} rows pass the filter")

    ctx = benchlib.server_context(tmp / "data", a.master, a.conf)
    try:
        spark = benchlib.start_session(ctx)
        prev = spark.conf.get("spark.sql.files.maxPartitionBytes")
        spark.conf.set("spark.sql.files.maxPartitionBytes", str(32 * 1024 * 1024))
        try:
            # warm-up (not timed): the JSON reader and the writer on a small file
            warm = tmp / "warm"
            benchlib.write_jsonl(warm / "w.jsonl", 1000)
            reference_batch(spark, warm, tmp / "warm-out")
            ref_s, ref_s_rows = reference_streaming(spark, src_dir, tmp / "ref-stream-out", tmp / "ref-ck")
            ref_b, ref_b_rows = reference_batch(spark, src_dir, tmp / "ref-batch-out")
        finally:
            spark.conf.set("spark.sql.files.maxPartitionBytes", prev)
        topo = sbpy_topology(ctx, src, tmp / "sbpy-out.jsonl", expected, a.timeout)
        only = sbpy_query_only(spark, topo["journal_dir"], tmp / "sbpy-q-out.jsonl", tmp / "q-ck", a.max_seqs)
    finally:
        ctx.close()
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    for name, rows in (("reference streaming", ref_s_rows), ("reference batch", ref_b_rows),
                       ("sbpy query only", only["rows_out"])):
        if rows != expected:
            print(f"  !! {name}: {rows} rows out, expected {expected}")
    rate = {
        "ref_stream": n / ref_s, "ref_batch": n / ref_b,
        "topo": n / topo["seconds"], "only": n / only["seconds"],
    }
    rows = [
        ("PySpark streaming json→filter→json (availableNow)", ref_s, rate["ref_stream"], 1.0, "-"),
        ("PySpark batch read.json→filter→write.json", ref_b, rate["ref_batch"],
         rate["ref_batch"] / rate["ref_stream"], "-"),
        ("sbpy topology: file source→journal segments→planned query→file sink", topo["seconds"], rate["topo"],
         rate["topo"] / rate["ref_stream"], topo["batches"]),
        ("sbpy planned query only (journal already written)", only["seconds"], rate["only"],
         rate["only"] / rate["ref_stream"], only["batches"]),
    ]
    print()
    print(benchlib.table(("path", "seconds", "rows/s", "× streaming ref", "batches"), rows))
    if topo.get("source_seconds"):
        print(f"\nsbpy source alone (parse + journal, driver thread): {topo['source_seconds']:.1f} s "
              f"= {n / topo['source_seconds']:,.0f} rows/s")
    print(f"sbpy query-only wall time incl. query start: {only['wall']:.1f} s")
    print(f"ratio sbpy topology / PySpark streaming reference: {rate['topo'] / rate['ref_stream']:.3f} "
          f"(reference {rate['ref_stream'] / rate['topo']:.1f}× faster)")


if __name__ == "__main__":
    main()
