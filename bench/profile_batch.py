"""Where a fused query's micro-batch time goes, and which settings change it.

Workload: the B2 topology's two streams as one fused query (``sbpy_journal`` →
``applyInPandasWithState`` → ``foreachBatch``), fed ``--tuples`` tuples per micro-batch: append to the
journal, wait until foreachBatch has seen them, repeat ``--batches`` times. For each variant it prints

* Spark's ``durationMs`` per phase (mean over the measured batches) and the state operator's
  commit time / RocksDB commit metrics from ``stateOperators``;
* timers inside the operator function (in the Python worker): reading the pandas frames,
  restoring state, ``Pipeline.run``, pickling the snapshots, ``state.update``, building the output frame;
* timers in the driver's foreachBatch: the Arrow collect + decode, and the callback.

The operator function here is an instrumented copy of ``bql/spark/state_function.state_function`` (same
``Pipeline`` and worker cache); the query is built like ``bql/spark/query.start_query`` — neither
module is changed. Variants: the production settings (RocksDB), HDFS-backed state store, RocksDB with
changelog checkpointing, checkpoints on tmpfs, no operator at all (journal → foreachBatch), a 2000-tuple
window state (pickling cost), and a fixed 100 ms trigger.

Run: ``/work/venv/bin/python bench/profile_batch.py [--batches 25] [--tuples 1] [--only NAME,...]``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
# the checkpoint logs through Hadoop's FileSystem API instead of FileContext (no chmod/readlink forks)
FS_MANAGER = {"spark.sql.streaming.checkpointFileManagerClass":
              "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"}

STAGES = [
    ("s1", "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8", ("src",)),
    ("s2", "SELECT ISTREAM id, price * 2 AS p2 FROM s1 [RANGE 2 TUPLES]", ("s1",)),
]
# a window of 2000 tuples: every batch pickles (and Spark stores) ~2000 tuples of state
BIG_N = 2000
BIG_STAGES = [("big", f"SELECT RSTREAM count(*) AS n, max(id) AS last FROM src [RANGE {BIG_N} TUPLES]", ("src",))]

# name -> (extra SQL conf, options)
VARIANTS: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "production (RocksDB)": ({}, {}),
    "HDFS state store": ({"spark.sql.streaming.stateStore.providerClass": HDFS}, {}),
    "RocksDB changelog ckpt": ({CHANGELOG: "true"}, {}),
    "FileSystem ckpt manager": (FS_MANAGER, {}),
    "changelog + FS manager": ({CHANGELOG: "true", **FS_MANAGER}, {}),
    "HDFS + FS manager": ({"spark.sql.streaming.stateStore.providerClass": HDFS, **FS_MANAGER}, {}),
    "checkpoint on tmpfs": ({}, {"tmpfs": True}),
    "no operator": ({}, {"no_operator": True}),
    "HDFS + tmpfs": ({"spark.sql.streaming.stateStore.providerClass": HDFS}, {"tmpfs": True}),
    "2k-tuple window state": ({}, {"big": True}),
    "2k-tuple window + HDFS": ({"spark.sql.streaming.stateStore.providerClass": HDFS}, {"big": True}),
    "trigger 100 ms": ({}, {"trigger_ms": 100}),
}


def instrumented_state_function(query_id: str, stages: list[Any], log_path: str) -> Callable:
    """``state_function``'s ``run_batch`` with timers, appended as JSON lines to ``log_path``."""
    cache_key = (query_id, tuple(s.key() for s in stages))

    def run_batch(key: Any, frames: Iterator[Any], state: Any) -> Iterator[Any]:
        import pickle
        import time as _t

        import pandas as pd

        from sbpy.bql.spark.operator import OUTPUT_COLUMNS
        from sbpy.bql.spark.state_function import _PIPELINES, _pipeline

        t = {"start": _t.time()}
        c0 = _t.perf_counter()
        parts = [f for f in frames if len(f)]
        pdf = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True) if parts else None
        c1 = _t.perf_counter()
        snap = bytes(state.get[0]) if state.exists and state.get[0] is not None else None
        c2 = _t.perf_counter()
        warm = cache_key in _PIPELINES and snap is not None and _PIPELINES[cache_key].saved == snap
        pipeline = _pipeline(cache_key, stages, "", snap)
        c3 = _t.perf_counter()
        rows: list[tuple] = []
        n_in = 0
        if pdf is not None:
            n_in = len(pdf)
            pdf = pdf.sort_values("seq", kind="stable")
            cols = (pdf["seq"].tolist(), pdf["input"].tolist(), pdf["ts"].tolist(), pdf["data"].tolist(),
                    pdf["end"].tolist())
            c3b = _t.perf_counter()
            pipeline.dirty = True  # as the operator does: ahead of Spark's state until saved
            rows = pipeline.run(zip(*cols))
        else:
            c3b = _t.perf_counter()
        c4 = _t.perf_counter()
        procs = [p.snapshot() for p in pipeline.processors]
        c5 = _t.perf_counter()
        new = pipeline.snapshot()
        c6 = _t.perf_counter()
        state.update((new,))
        pipeline.saved, pipeline.dirty = new, False
        c7 = _t.perf_counter()
        out = pd.DataFrame.from_records(rows, columns=OUTPUT_COLUMNS) if rows else \
            pd.DataFrame({c: pd.Series(dtype="int64" if c in ("seq", "idx", "ts") else "object")
                          for c in OUTPUT_COLUMNS})
        c8 = _t.perf_counter()
        t.update(frames_ms=(c1 - c0) * 1e3, state_get_ms=(c2 - c1) * 1e3, restore_ms=(c3 - c2) * 1e3,
                 sort_tolist_ms=(c3b - c3) * 1e3, run_ms=(c4 - c3b) * 1e3, proc_snapshots_ms=(c5 - c4) * 1e3,
                 pickle_all_ms=(c6 - c5) * 1e3, state_update_ms=(c7 - c6) * 1e3, out_frame_ms=(c8 - c7) * 1e3,
                 snap_bytes=len(new), rows_in=n_in, rows_out=len(rows), warm_cache=warm,
                 snapshot_sizes=[len(pickle.dumps(p)) for p in procs])
        with open(log_path, "a") as f:
            f.write(json.dumps(t) + "\n")
        yield out

    return run_batch


def start(spark: Any, journal_dir: Path, ck: Path, stages: list[Any], fn: Callable | None,
          on_rows: Callable[[int, list[dict]], None], timers: dict[str, list[float]], trigger_ms: int | None,
          name: str) -> Any:
    """The plan of ``query.start_query`` with our function and a timed foreachBatch bridge."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout

    from sbpy.bql.spark import journal_format as jf
    from sbpy.bql.spark.operator import OUTPUT_SCHEMA, STATE_SCHEMA

    df = (spark.readStream.format("sbpy_journal").option("dir", str(journal_dir)).option("inputs", "src")
          .option("start_seq", "0").load())
    if fn is not None:
        df = (df.withColumn("k", F.lit(0)).groupBy("k")
              .applyInPandasWithState(fn, OUTPUT_SCHEMA, STATE_SCHEMA, "Append", GroupStateTimeout.NoTimeout))

    def bridge(batch_df: Any, batch_id: int) -> None:
        c0 = time.perf_counter()
        rows = batch_df.toArrow().to_pylist()
        c1 = time.perf_counter()
        if fn is not None:
            rows.sort(key=lambda r: (r["seq"], r["idx"]))
            for r in rows:
                if r["data"] is not None:
                    r["data"] = jf.decode_data(r["data"])
        c2 = time.perf_counter()
        on_rows(batch_id, rows)
        timers["collect_ms"].append((c1 - c0) * 1e3)
        timers["decode_ms"].append((c2 - c1) * 1e3)
        timers["callback_ms"].append((time.perf_counter() - c2) * 1e3)

    w = df.writeStream.queryName(name).option("checkpointLocation", str(ck)).foreachBatch(bridge)
    if trigger_ms:
        w = w.trigger(processingTime=f"{trigger_ms} milliseconds")
    prev = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "1")
    try:
        return w.start()
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", prev)


def run_variant(spark: Any, tmp: Path, name: str, conf: dict[str, str], opts: dict[str, Any], batches: int,
                tuples: int) -> dict[str, Any]:
    from sbpy.bql.spark.operator import StageSpec
    from sbpy.server.journal import JournalWriter

    slug = "".join(c if c.isalnum() else "_" for c in name)
    base = Path(tempfile.mkdtemp(prefix=f"sbpy-prof-{slug}-", dir="/dev/shm")) if opts.get("tmpfs") \
        else tmp / slug
    base.mkdir(parents=True, exist_ok=True)
    journal = JournalWriter(base / "journal")
    stages = [StageSpec(*s) for s in (BIG_STAGES if opts.get("big") else STAGES)]
    log_path = base / "worker.jsonl"
    fn = None if opts.get("no_operator") else instrumented_state_function(f"prof.{slug}", stages, str(log_path))
    seen = {"seq": 0}
    cond = threading.Condition()
    timers: dict[str, list[float]] = {"collect_ms": [], "decode_ms": [], "callback_ms": []}

    def on_rows(batch_id: int, rows: list[dict]) -> None:
        with cond:
            if rows:
                seen["seq"] = max(seen["seq"], max(int(r["seq"]) for r in rows))
            cond.notify_all()

    def feed(k: int) -> None:
        last = journal.append("src", [(int(time.time() * 1e6), {"id": journal.head + j + 1, "price": 1.0})
                                      for j in range(k)])
        with cond:
            if not cond.wait_for(lambda: seen["seq"] >= last, timeout=120):
                raise TimeoutError(f"{name}: seq {last} not seen")

    previous = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        q = start(spark, base / "journal", base / "ck", stages, fn, on_rows, timers, opts.get("trigger_ms"),
                  f"prof-{slug}")
    finally:
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
    try:
        if opts.get("big"):
            feed(BIG_N)  # fill the window
        feed(tuples)  # warm: first batch of this query
        skip = len(q.recentProgress)
        for k in timers:
            timers[k].clear()
        if log_path.exists():
            log_path.write_text("")
        lat = []
        for _ in range(batches):
            t0 = time.perf_counter()
            feed(tuples)
            lat.append(time.perf_counter() - t0)
        progress = [p for p in q.recentProgress[skip:] if p.get("numInputRows")]
    finally:
        q.stop()
    worker = [json.loads(x) for x in log_path.read_text().splitlines()] if log_path.exists() else []
    worker = [w for w in worker if w.get("rows_in")]
    if opts.get("tmpfs"):
        shutil.rmtree(base, ignore_errors=True)
    return {"name": name, "progress": progress, "worker": worker, "timers": timers, "lat": lat}


def merge(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result from several runs of a variant (their batches pooled)."""
    out: dict[str, Any] = {"name": runs[0]["name"], "progress": [], "worker": [], "lat": [],
                           "timers": {k: [] for k in runs[0]["timers"]}}
    for r in runs:
        out["progress"] += r["progress"]
        out["worker"] += r["worker"]
        out["lat"] += r["lat"]
        for k, v in r["timers"].items():
            out["timers"][k] += v
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def summarize(r: dict[str, Any]) -> dict[str, float]:
    prog = r["progress"]
    out: dict[str, float] = {}
    keys = sorted({k for p in prog for k in p["durationMs"]})
    for k in keys:
        out[f"spark.{k}"] = _mean([p["durationMs"].get(k, 0) for p in prog])
    ops = [p["stateOperators"][0] for p in prog if p.get("stateOperators")]
    if ops:
        out["state.commitTimeMs"] = _mean([o.get("commitTimeMs", 0) for o in ops])
        out["state.allUpdatesTimeMs"] = _mean([o.get("allUpdatesTimeMs", 0) for o in ops])
        for m in sorted({m for o in ops for m in (o.get("customMetrics") or {})}):
            if "Latency" in m or "TimeMs" in m or m.endswith("Ms"):
                out[f"state.{m}"] = _mean([(o.get("customMetrics") or {}).get(m, 0) for o in ops])
    for k in ("frames_ms", "state_get_ms", "restore_ms", "sort_tolist_ms", "run_ms", "proc_snapshots_ms",
              "pickle_all_ms", "state_update_ms", "out_frame_ms", "snap_bytes"):
        vals = [w[k] for w in r["worker"] if k in w]
        if vals:
            out[f"worker.{k}"] = _mean(vals)
    if r["worker"]:
        out["worker.cache_hit_%"] = 100 * _mean([1.0 if w["warm_cache"] else 0.0 for w in r["worker"]])
    for k, v in r["timers"].items():
        out[f"driver.{k}"] = _mean(v)
    out["append→seen ms p50"] = benchlib.summary_ms(r["lat"])["p50"] if r["lat"] else 0.0
    out["batches"] = float(len(prog))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=25)
    ap.add_argument("--tuples", type=int, default=1, help="tuples per micro-batch")
    ap.add_argument("--only", default="", help="comma-separated variant names (default: all)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rounds", type=int, default=1, help="run every variant this many times, alternating order")
    ap.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up query")
    a = ap.parse_args()
    names = [n for n in VARIANTS if not a.only or n in a.only.split(",")]
    print(f"profile: {a.batches} micro-batches of {a.tuples} tuple(s) per variant; {benchlib.load_note()}")
    from sbpy.server.context import ServerContext

    if __name__ != "__main__":  # imported (tests): ship this module's functions by value to the workers
        from pyspark import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-prof-"))
    ctx = ServerContext(data_dir=tmp / "data", master=a.master)
    results = []
    try:
        ctx.warm_up().join()
        spark = ctx.spark()
        if not a.no_warmup:  # JIT, Python workers and the first stateful query's setup, not reported
            run_variant(spark, tmp, "warm-up", {}, {}, 3, a.tuples)
        runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        for r in range(a.rounds):  # alternate the order so load drift and warm-up do not favour one variant
            for name in (names if r % 2 == 0 else names[::-1]):
                conf, opts = VARIANTS[name]
                t0 = time.perf_counter()
                runs[name].append(run_variant(spark, tmp, f"{name}", conf, opts, a.batches, a.tuples))
                print(f"  {name}: done in {time.perf_counter() - t0:.0f} s ({benchlib.load_note()})", flush=True)
        results = [merge(runs[n]) for n in names]
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    sums = [summarize(r) for r in results]
    keys = sorted({k for s in sums for k in s}, key=lambda k: (k.split(".")[0], k))
    print()
    print(benchlib.table(["ms (mean per batch)"] + [r["name"] for r in results],
                         [[k] + [s.get(k, "-") for s in sums] for k in keys]))
    print(f"\n(machine: {benchlib.load_note()})")


if __name__ == "__main__":
    main()
