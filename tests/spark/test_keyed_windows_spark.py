"""A keyed Timeplus window stage on Spark (``keyed_query`` with ``WindowRouter`` / ``WindowBucket``): over
several micro-batches and a restart from the checkpoint, tumble and hop GROUP BYs with late rows, bad
times, a failing WHERE, mixed key types and a stage after the window give exactly the sequential
operator's rows (the driver's ``(seq, idx, sub)`` order)."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.keyed_plan import WINDOW, plan_keyed
from sbpy.bql.spark.operator import Pipeline, StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.testing import TestJournal

TUMBLE = [StageSpec("w", "SELECT RSTREAM k, count(*) AS n, sum(v) AS s, window_start, window_end "
                         "FROM tumble(src, t, 5s) WHERE 10 / v >= 0 GROUP BY k, window_start, window_end", ("src",))]
HOP_TAIL = [StageSpec("w", "SELECT RSTREAM k, count(*) AS n, window_start FROM hop(src, t, 3s, 9s) "
                           "GROUP BY k, window_start EMIT AFTER WATERMARK WITH DELAY 2s", ("src",)),
            StageSpec("f", "SELECT RSTREAM k, n * 10 AS n10 FROM w [RANGE 1 TUPLES] WHERE n > 1", ("w",))]


def stream(n, seed):
    rng = random.Random(seed)
    rows, t = [], 0
    for i in range(n):
        t += rng.choice([0, 0, 1, 2, 5])
        row = {"k": rng.choice(["a", "b", 1, 1.0, None, f"k{i % 40}"]), "v": rng.choice([0, 1, 2, 3]),
               "t": max(0, t - 30) if rng.random() < 0.08 else t}
        if rng.random() < 0.03:
            row["t"] = "bad"
        rows.append(row)
    return rows


def _reference(stages, journal_dir, upto):
    rows = Pipeline(stages).run(jf.read_entries(journal_dir, ["src"], 0, upto))
    cols = ["kind", "node", "seq", "idx", "ts", "data", "error", "input", "event"]
    return [dict(zip(cols, r)) for r in sorted(rows, key=lambda r: (r[2], r[3]))]


def _summary(rows, node):
    def data(r):
        return jf.encode_data(r["data"]) if r["data"] is not None and not isinstance(r["data"], str) else r["data"]
    outs = [(r["seq"], r["ts"], jf.decode_data(data(r))) for r in rows if r["kind"] == "out"]
    dropped = Counter((r["node"], r["seq"], data(r), r["error"], r["input"], r["event"])
                      for r in rows if r["kind"] == "dropped")
    stats = [jf.decode_data(data(r)) for r in rows if r["kind"] == "stat" and r["node"] == node]
    sent = sum(s["sent"] for s in stats)
    received = sum(s["received"].get("src", 0) for s in stats)
    return outs, dropped, sent, received, sorted(r["node"] for r in rows if r["kind"] == "end")


@pytest.mark.spark
@pytest.mark.parametrize("stages, seed", [(TUMBLE, 1), (HOP_TAIL, 2)], ids=["tumble", "hop-with-tail"])
def test_keyed_windows_on_spark_equal_the_sequential_operator(spark, tmp_path, stages, seed):
    plan = plan_keyed(stages, ("src",))
    assert plan is not None and plan.kind == WINDOW
    rows = stream(240, seed)
    journal = TestJournal(tmp_path / "journal")
    got: list[dict] = []
    batches: list[int] = []

    def on_batch(batch_id, out):
        batches.append(batch_id)
        got.extend(out)

    spec = QuerySpec(query_id=f"t.keyed.windows.{seed}", journal_dir=tmp_path / "journal", inputs=("src",),
                     stages=stages, checkpoint_dir=tmp_path / "ck", on_batch=on_batch, topology="t",
                     max_seqs=60, keyed_partitions=3)
    journal.append([("src", r) for r in rows[:130]])
    handle = start_query(spark, spec)
    handle.process_all_available()
    handle.stop()
    assert handle.error is None
    journal.append([("src", r) for r in rows[130:]] + [("src", None)])
    handle = start_query(spark, spec)  # restart from the checkpoint
    handle.process_all_available()
    handle.stop()
    assert handle.error is None
    got.sort(key=lambda r: (r["seq"], r["idx"], r.get("sub") or 0))
    want = _reference(stages, tmp_path / "journal", journal.seq)
    assert _summary(got, "w") == _summary(want, "w")
    assert sum(1 for r in got if r["kind"] == "out") >= 20
    assert (tmp_path / "ck" / "keyed-v4").is_dir() and len(batches) >= 4
