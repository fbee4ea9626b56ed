"""Nexmark — events/s of q0-q8, q11, q12 through sbpy next to hand-written PySpark streaming jobs.

Both sides get the same events: sbpy generates them with its ``nexmark`` source (unthrottled, the
same configuration), the reference jobs read them from a JSONL file the same generator wrote before
the timed part (times as epoch milliseconds, turned into timestamps by ``timestamp_millis``). sbpy
runs examples/nexmark/<q>.bql in a real ``Topology`` on the ``ServerContext``'s Spark, timed from
RESUME SOURCE until the query's stream has stopped; the reference is a streaming query with an
explicit schema and ``trigger(availableNow)``, timed from start to termination, writing through
``foreachBatch`` into a list. events/s is the number of generated events over that time.

The reference jobs, per query, as one would write them in PySpark:

- q0-q2: projection and filter; q3: a stream-stream inner join;
- q7, q12: one event-time ``window`` aggregation (q7 takes ``max(struct(price, ...))``, the
  highest bid itself); q11: ``session_window``; q8: one windowed aggregation over persons and
  auctions keyed by person id, kept where both kinds occur;
- q5: the hop count as a windowed aggregation, each window's maximum and the join done per
  micro-batch in ``foreachBatch`` (Spark emits all of a window's groups in one batch);
- q4, q6: the stream-stream join of bids with their auctions' [date_time, expires] as a streaming
  query; the per-auction maximum and the average are computed over the joined rows at the end
  (Spark cannot chain the two aggregations of an updating query).

Windows close by a watermark of 0 s on the raw stream; two last sets of sentinel events (ids -1, a
day and two days later, one file each, one file per micro-batch) move it past every window, as
sbpy's end-of-input flush does; their own rows are dropped. Rows are compared as the
test does (tests/e2e/nexmark_reference.comparable; every query as a multiset, since the reference's
output order is Spark's), and a mismatch is printed. Run:
``.venv/bin/python bench/nexmark.py [--events 20000] [--rate 100] [--queries q0,q5]``. Prints a
table; never asserts timings.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import benchlib
from nexmark_reference import LAST_PER_KEY, QUERIES, REFERENCES, frames, script_for
from sbpy.bql.runtime.testing import json_ready
from sbpy.plugins.builtin.nexmark_model import EPOCH, NexmarkConfig, events

SCHEMA = ("event_type int, id long, name string, city string, state string, item_name string, "
          "initial_bid long, reserve long, expires_ms long, seller long, category long, auction long, "
          "bidder long, price long, t long, extra string")


SENTINELS = ({"event_type": 0, "id": -1, "name": "", "city": "", "state": ""},
             {"event_type": 1, "id": -1, "seller": -1, "category": -1, "initial_bid": 0, "reserve": 0},
             {"event_type": 2, "auction": -1, "bidder": -1, "price": -1})


def write_events(config: NexmarkConfig, src_dir: Path) -> int:
    """The generator's events as JSON lines (times in epoch ms) in ``a-events.jsonl``, then sentinel
    events of each kind (ids -1), a day and two days later, in files of their own; returns the
    cutoff (epoch ms) below which the real events lie. Read one file per micro-batch, the second
    sentinels' batch runs with the watermark at the first, past every window of the real events
    (Spark's availableNow runs no batch without data to close them). The sentinels are of the
    queries' own kinds because Spark pushes a filter on the kind below the watermark."""
    last = 0
    with (src_dir / "a-events.jsonl").open("w") as f:
        for e in events(config):
            row = {k: v for k, v in e.items() if k not in ("date_time", "expires", "email_address",
                                                            "credit_card", "description")}
            row["t"] = last = _ms(e["date_time"])
            if "expires" in e:
                row["expires_ms"] = _ms(e["expires"])
            f.write(json.dumps(row) + "\n")
    stamp = time.time() - 60
    os.utime(src_dir / "a-events.jsonl", (stamp, stamp))
    for day in (1, 2):
        path = src_dir / f"b-sentinel-{day}.jsonl"
        t = last + day * 86_400_000
        path.write_text("".join(json.dumps(dict(s, t=t, expires_ms=t)) + "\n" for s in SENTINELS))
        os.utime(path, (stamp + day, stamp + day))
    return last + 86_400_000


def _ms(ts: Any) -> int:
    d = _aware(ts) - EPOCH
    return d.days * 86_400_000 + d.seconds * 1000 + d.microseconds // 1000


def _aware(ts: Any) -> Any:
    """Spark hands timestamps back as naive datetimes in the session time zone (UTC here)."""
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=EPOCH.tzinfo)


def _seconds(ts: Any) -> int | float:
    ms = _ms(ts)
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def reference_job(spark: Any, query: str, src_dir: Path, ck: Path, cutoff_ms: int) -> tuple[float, list[Any]]:
    """Run the hand-written streaming job of ``query``; (seconds, its rows as JSON values). Rows of the
    sentinels (``write_events``) are dropped: before a join or projection, after a window."""
    from pyspark.sql import functions as F

    raw = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(src_dir))
           .withColumn("date_time", F.timestamp_millis("t"))
           .withColumn("expires", F.timestamp_millis("expires_ms"))
           .withWatermark("date_time", "0 seconds"))
    cutoff = F.timestamp_millis(F.lit(cutoff_ms))
    real = raw.where(F.col("date_time") < cutoff)
    person, auction, bid = (real.where(F.col("event_type") == k) for k in (0, 1, 2))
    windowed_bid = raw.where(F.col("event_type") == 2)
    collected: list[Any] = []
    post = None
    mode = "append"
    if query == "q0":
        df = bid.select("auction", "bidder", "price", "date_time", "extra")
    elif query == "q1":
        df = bid.select("auction", "bidder", (F.lit(0.908) * F.col("price")).alias("price"), "date_time", "extra")
    elif query == "q2":
        df = bid.where(F.col("auction") % 123 == 0).select("auction", "price")
    elif query == "q3":
        a = auction.where(F.col("category") == 10).select(F.col("id").alias("aid"), "seller")
        p = person.where(F.col("state").isin("OR", "ID", "CA")).select("id", "name", "city", "state")
        df = a.join(p, a.seller == p.id).select("name", "city", "state", F.col("aid").alias("id"))
    elif query in ("q4", "q6"):
        key = "category" if query == "q4" else "seller"
        a = auction.select(F.col("id").alias("aid"), key, F.col("date_time").alias("a_dt"), "expires")
        b = bid.select("auction", "price", F.col("date_time").alias("b_dt"))
        df = b.join(a, F.expr("auction = aid AND b_dt >= a_dt AND b_dt <= expires")).select("aid", key, "price")

        def post(rows: list[Any]) -> list[Any]:
            best: dict[tuple, int] = {}
            for r in rows:
                k = (r["aid"], r[key])
                best[k] = max(best.get(k, r["price"]), r["price"])
            sums: dict[Any, list[int]] = {}
            for (_, k), v in best.items():
                s = sums.setdefault(k, [0, 0])
                s[0] += v
                s[1] += 1
            return [{key: k, "avg_final": s / n} for k, (s, n) in sums.items()]
    elif query == "q5":
        w = F.window("date_time", "10 seconds", "2 seconds")
        df = windowed_bid.groupBy(w, "auction").agg(F.count("*").alias("num"))

        def each_batch(batch: Any, _bid: int) -> None:  # every group of a window comes in one batch
            batch = batch.where(F.col("window.start") < cutoff)
            best = batch.groupBy("window").agg(F.max("num").alias("maxn"))
            rows = batch.join(best, "window").where("num >= maxn").select(
                "auction", "num", F.unix_seconds(F.col("window.start")).alias("starttime"))
            collected.extend(r.asDict() for r in rows.collect())
    elif query == "q7":
        df = windowed_bid.groupBy(F.window("date_time", "10 seconds")).agg(
            F.max(F.struct("price", "auction", "bidder", "date_time", "extra")).alias("b")).where(
            F.col("window.start") < cutoff).select(
            "b.auction", "b.price", "b.bidder", "b.date_time", "b.extra")
    elif query == "q8":
        keyed = raw.where("event_type IN (0, 1)").select(
            "date_time", F.when(F.col("event_type") == 0, F.col("id")).otherwise(F.col("seller")).alias("pid"),
            F.when(F.col("event_type") == 0, F.col("name")).alias("name"), "event_type")
        df = (keyed.groupBy(F.window("date_time", "10 seconds"), "pid")
              .agg(F.max("name").alias("name"), F.min("event_type").alias("lo"), F.max("event_type").alias("hi"))
              .where((F.col("lo") == 0) & (F.col("hi") == 1) & (F.col("window.start") < cutoff))
              .select(F.col("pid").alias("id"), "name", F.unix_seconds(F.col("window.start")).alias("starttime")))
    elif query == "q11":
        df = windowed_bid.groupBy(F.session_window("date_time", "10 seconds"), "bidder").agg(
            F.count("*").alias("bid_count")).where(F.col("session_window.start") < cutoff).select(
            "bidder", "bid_count", F.col("session_window.start").alias("starttime"),
            F.col("session_window.end").alias("endtime"))
    elif query == "q12":
        df = windowed_bid.groupBy(F.window("date_time", "10 seconds"), "bidder").agg(
            F.count("*").alias("bid_count")).where(F.col("window.start") < cutoff).select(
            "bidder", "bid_count", F.unix_seconds(F.col("window.start")).alias("window_start"),
            F.unix_seconds(F.col("window.end")).alias("window_end"))
    else:
        raise ValueError(query)

    if query != "q5":
        def each_batch(batch: Any, _bid: int) -> None:
            collected.extend(r.asDict() for r in batch.collect())

    t0 = time.perf_counter()
    q = (df.writeStream.outputMode(mode).foreachBatch(each_batch).option("checkpointLocation", str(ck))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination()
    finally:
        q.stop()
    rows = post(collected) if post is not None else collected
    seconds = time.perf_counter() - t0
    if query == "q11":
        rows = [dict(r, starttime=_seconds(r["starttime"]), endtime=_seconds(r["endtime"])) for r in rows]
    return seconds, [json_ready({k: _aware(v) if isinstance(v, _dt.datetime) else v for k, v in r.items()})
                     for r in rows]


def sbpy_run(ctx: Any, query: str, source_with: str, out: Path, name: str, timeout: float) -> float:
    """examples/nexmark/<query>.bql in a Topology on Spark; seconds from RESUME to the stream's stop."""
    from sbpy.bql.parser import parse_script
    from sbpy.server.nodes.source_node import wait_until
    from sbpy.server.topology import Topology

    t = Topology(name, ctx)
    try:
        for p in parse_script(script_for(query, source_with, {query: out})):
            t.execute(p)
        for consumer in list(t.consumers.values()):  # let every query finish its start-up first
            wait_until(lambda c=consumer: c.handle is not None and c.handle.last_progress is not None, 300, 0.05)
        t0 = time.perf_counter()
        t.execute(parse_script("RESUME SOURCE nexmark;")[0])
        if not wait_until(lambda: t.node("stream", query)["state"] == "stopped", timeout, 0.05):
            print(f"  !! {query}: sbpy did not finish in {timeout} s")
        return time.perf_counter() - t0
    finally:
        t.stop()


def comparable(query: str, rows: list[Any]) -> list[Any]:
    if query in LAST_PER_KEY:
        last = {r[LAST_PER_KEY[query]]: r for r in rows}
        rows = list(last.values())
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--rate", type=float, default=100.0, help="event-time events per second (window sizes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--reference-only", action="store_true",
                    help="check the PySpark jobs against the pandas batch answers of tests/e2e; no sbpy run")
    a = ap.parse_args()
    config = NexmarkConfig(count=a.events, events_per_second=a.rate, seed=a.seed)
    source_with = f"count = {a.events}, events_per_second = {a.rate}, seed = {a.seed}, unthrottled = true"
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-nexmark-"))
    print(f"Nexmark: {a.events:,} events at {a.rate:g} events/s of event time, seed {a.seed}; master {a.master}; "
          f"{benchlib.load_note()}")
    src_dir = tmp / "in"
    src_dir.mkdir()
    cutoff_ms = write_events(config, src_dir)
    ctx = benchlib.server_context(tmp / "data", a.master, ["spark.sql.session.timeZone=UTC"])
    rows_out = []
    try:
        spark = benchlib.start_session(ctx)
        reference_job(spark, "q0", src_dir, tmp / "warm-ck", cutoff_ms)  # warm-up, not timed
        batch = frames(config) if a.reference_only else None
        for i, query in enumerate(a.queries.split(",")):
            ref_s, ref_rows = reference_job(spark, query, src_dir, tmp / f"ck-{query}", cutoff_ms)
            if batch is not None:
                same = comparable(query, REFERENCES[query](batch)) == comparable(query, ref_rows)
                print(f"{query}: reference {ref_s:.2f} s, {len(ref_rows)} rows, "
                      f"{'same as' if same else 'DIFFERENT from'} the pandas answer", flush=True)
                continue
            out = tmp / f"{query}.jsonl"
            sb_s = sbpy_run(ctx, query, source_with, out, f"nx{i}", a.timeout)
            got = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
            same = comparable(query, got) == comparable(query, ref_rows)
            rows_out.append((query, a.events / sb_s, a.events / ref_s, ref_s / sb_s, len(got),
                             "same" if same else f"DIFFERENT ({len(ref_rows)} reference rows)"))
            print(f"{query}: sbpy {sb_s:.2f} s, reference {ref_s:.2f} s, rows {rows_out[-1][-1]}; "
                  f"{benchlib.load_note()}", flush=True)
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if not rows_out:
        return
    print()
    print(benchlib.table(["query", "sbpy events/s", "PySpark events/s", "sbpy/PySpark", "rows", "rows vs PySpark"],
                         rows_out))
    print(benchlib.load_note())


if __name__ == "__main__":
    main()
