"""EMIT PERIODIC [REPEAT] on the wall clock through a Spark query: the operator's processing-time
timeout wakes the pipeline with no new data; no sleep is longer than the period (conditions are polled)."""
from __future__ import annotations

import threading
import time

import pytest

from sbpy.bql.spark.operator import StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.testing import TestJournal

pytestmark = pytest.mark.spark

PERIOD_MS = 500
NO_DATA = "spark.sql.streaming.noDataMicroBatches.enabled"


class Collector:
    def __init__(self):
        self.rows: list[dict] = []
        self.batches = 0
        self.lock = threading.Lock()

    def __call__(self, batch_id, rows):
        with self.lock:
            self.batches += 1
            self.rows.extend(rows)

    def outs(self):
        with self.lock:
            return [r for r in self.rows if r["kind"] == "out"]


def wait_for(cond, timeout=90.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return False


def _start(spark, tmp_path, query, got, name):
    spec = QuerySpec(query_id=f"t.{name}", journal_dir=tmp_path / "journal", inputs=("src",),
                     stages=[StageSpec("s", query, ("src",))], checkpoint_dir=tmp_path / "ck",
                     on_batch=got, topology="t")
    return start_query(spark, spec)


def test_periodic_emits_changed_groups_on_the_wall_clock(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    before = spark.conf.get(NO_DATA)
    q = f"SELECT RSTREAM k, count(*) AS c FROM src GROUP BY k EMIT PERIODIC {PERIOD_MS} MILLISECONDS"
    handle = _start(spark, tmp_path, q, got, "periodic")
    try:
        assert spark.conf.get(NO_DATA) == before  # enabled for that query only
        journal.append([("src", {"k": "a"}), ("src", {"k": "a"}), ("src", {"k": "b"})])
        # the input never ends: only a wall-clock tick can emit these
        assert wait_for(lambda: {(d["k"], d["c"]) for d in (r["data"] for r in got.outs())} >= {("a", 2), ("b", 1)})
        journal.append([("src", {"k": "a"})])
        assert wait_for(lambda: any(r["data"] == {"k": "a", "c": 3} for r in got.outs()))
        seen = len(got.outs())
        batches = got.batches
        # no change: later periods run (timed-out) batches but emit nothing again
        assert wait_for(lambda: got.batches >= batches + 3)
        assert len(got.outs()) == seen
        assert handle.is_active and handle.error is None
    finally:
        handle.stop()
    data = [r["data"] for r in got.outs()]
    assert sorted((d["k"], d["c"]) for d in data) == [("a", 2), ("a", 3), ("b", 1)]
    assert [r for r in got.rows if r["kind"] == "dropped"] == []


def test_periodic_repeat_emits_every_period_without_new_data(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    q = f"SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC {PERIOD_MS} MILLISECONDS REPEAT"
    handle = _start(spark, tmp_path, q, got, "repeat")
    try:
        journal.append([("src", {"x": 1}), ("src", {"x": 2})])
        assert wait_for(lambda: len(got.outs()) >= 4)
    finally:
        handle.stop()
    outs = got.outs()
    assert all(r["data"] == {"c": 2} for r in outs)
    periods = [r["ts"] // (PERIOD_MS * 1000) for r in outs]  # ts = the tick's processing time (µs)
    assert len(set(periods)) == len(periods)  # at most one emission per period boundary
    assert periods == sorted(periods)


def test_plain_query_still_runs_without_ticks(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    handle = _start(spark, tmp_path, "SELECT RSTREAM count(*) AS c FROM src [RANGE 2 TUPLES]", got, "plain")
    try:
        journal.append([("src", {"x": 1}), ("src", {"x": 2})])
        handle.process_all_available()
        batches = got.batches
        # no timeout and no no-data batches: an idle query runs no micro-batch at all
        assert not wait_for(lambda: got.batches > batches, timeout=1.5)
    finally:
        handle.stop()
    assert [r["data"] for r in got.outs()] == [{"c": 1}, {"c": 2}]
