"""Fused queries on Spark: journal → stand-in or BQL stages → foreachBatch, restarts, failures."""
from __future__ import annotations

import threading

import pytest

from sbpy.bql.spark.operator import StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.testing import TestJournal, pass_through, running_count

pytestmark = pytest.mark.spark


class Collector:
    """An ``on_batch`` that keeps every row and the batch ids."""

    def __init__(self):
        self.rows: list[dict] = []
        self.batch_ids: list[int] = []

    def __call__(self, batch_id, rows):
        self.batch_ids.append(batch_id)
        self.rows.extend(rows)

    def kind(self, kind):
        return [r for r in self.rows if r["kind"] == kind]


def _spec(tmp_path, collector, stages=None, inputs=("a", "b"), **kw):
    stages = stages if stages is not None else [StageSpec("s1", "", ("a", "b"), factory=pass_through),
                                                 StageSpec("s2", "", ("s1",), factory=running_count)]
    return QuerySpec(query_id=kw.pop("query_id", "t.q"), journal_dir=kw.pop("journal_dir", tmp_path / "journal"),
                     inputs=inputs, stages=stages, checkpoint_dir=tmp_path / "ck", on_batch=collector, topology="t",
                     **kw)


def test_fused_stages_state_and_restart(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    journal.append([("a", {"x": 1}), ("b", {"x": 2}), ("a", {"x": 3})])
    handle = start_query(spark, _spec(tmp_path, got))
    handle.process_all_available()
    journal.append([("b", {"x": 4}), ("a", {"x": 5})])
    handle.process_all_available()
    assert handle.is_active and handle.error is None
    handle.stop()
    assert not handle.is_active
    journal.append([("a", {"x": 6})])
    handle = start_query(spark, _spec(tmp_path, got))  # same checkpoint: resumes
    handle.process_all_available()
    outs = got.kind("out")
    assert [r["seq"] for r in outs] == [1, 2, 3, 4, 5, 6]
    assert [r["data"]["n"] for r in outs] == [1, 2, 3, 4, 5, 6]
    assert [r["data"]["last"]["x"] for r in outs] == [1, 2, 3, 4, 5, 6]
    assert [r["data"]["last"]["via_s1"] for r in outs] == ["a", "b", "a", "b", "a", "a"]
    assert outs[0]["ts"] == 1000 and outs[0]["node"] == "s2"
    received = {}
    for r in got.kind("stat"):
        for name, n in r["data"]["received"].items():
            received[(r["node"], name)] = received.get((r["node"], name), 0) + n
    assert received == {("s1", "a"): 4, ("s1", "b"): 2, ("s2", "s1"): 6}
    assert got.batch_ids == sorted(set(got.batch_ids))


def test_dropped_and_end(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    journal.append([("a", {"x": 1}), ("a", {"fail": True}), ("a", None), ("b", {"x": 3})])
    handle = start_query(spark, _spec(tmp_path, got))
    handle.process_all_available()
    assert [(r["node"], r["seq"]) for r in got.kind("dropped")] == [("s2", 2)]
    assert "bad tuple 2" in got.kind("dropped")[0]["error"]
    assert got.kind("end") == []
    journal.append([("b", None)])
    handle.process_all_available()
    assert [r["node"] for r in got.kind("end")] == ["s1", "s2"]
    assert [r["data"] for r in got.kind("out")][-1] == {"finished": "s1"}
    assert handle.is_active


def start_failing_query(spark, tmp_path, query_id):
    """A query whose sink raises on its first batch; its handle and the errors ``on_error`` got, with
    an event set at the first."""
    journal = TestJournal(tmp_path / "journal")
    journal.append([("a", {"x": 1})])
    failed = threading.Event()
    errors: list[str] = []

    def boom(batch_id, rows):
        raise RuntimeError("sink exploded")

    def on_error(text):
        errors.append(text)
        failed.set()

    handle = start_query(spark, _spec(tmp_path, boom, on_error=on_error, query_id=query_id))
    return handle, errors, failed


def test_failure_is_reported(spark, tmp_path):
    handle, errors, failed = start_failing_query(spark, tmp_path, "t.fail")
    assert failed.wait(60)
    assert "sink exploded" in errors[0] and "sink exploded" in handle.error
    assert not handle.is_active


def test_failure_is_reported_when_the_listener_event_is_lost(spark, tmp_path, monkeypatch):
    """A broken py4j callback connection loses ``onQueryTerminated``: the watcher still reports."""
    from sbpy.bql.spark import query as query_module

    monkeypatch.setattr(query_module, "_on_terminated", lambda query_id, error: None)
    handle, errors, failed = start_failing_query(spark, tmp_path, "t.lost")
    assert failed.wait(60)
    assert errors == [handle.error] and "sink exploded" in errors[0]


def test_real_bql_stage(spark, tmp_path):
    pytest.importorskip("sbpy.bql.parser")
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    stages = [StageSpec("s", "SELECT RSTREAM sum(x) AS s FROM src [RANGE 3 TUPLES]", ("src",))]
    journal.append([("src", {"x": i}) for i in (1, 2, 3)])
    handle = start_query(spark, _spec(tmp_path, got, stages=stages, inputs=("src",), query_id="t.bql"))
    handle.process_all_available()
    journal.append([("src", {"x": i}) for i in (4, 5)])
    handle.process_all_available()
    assert [r["data"] for r in got.kind("out")] == [{"s": 1}, {"s": 3}, {"s": 6}, {"s": 9}, {"s": 12}]
    assert got.kind("dropped") == []


def test_the_snapshot_layout_reads_ranges_the_logged_one_rows(spark, tmp_path, monkeypatch):
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    journal.append([("a", {"x": i}) for i in range(5)] + [("b", {"x": 9})])
    handle = start_query(spark, _spec(tmp_path, got))  # no plan: the logged layout
    handle.process_all_available()
    assert not handle.reads_ranges and handle.last_progress["numInputRows"] == 6
    handle.stop()
    monkeypatch.setenv("SBPY_FUSED_STATE", "snapshot")
    again = Collector()
    handle = start_query(spark, _spec(tmp_path / "snap", again, journal_dir=tmp_path / "journal"))
    handle.process_all_available()
    assert handle.reads_ranges and handle.last_progress["numInputRows"] == 6  # rows (fewer than ranges_from)
    assert [r["seq"] for r in got.kind("out")] == [r["seq"] for r in again.kind("out")] == [1, 2, 3, 4, 5, 6]
    handle.stop()


def test_a_large_batch_reaches_the_operator_as_its_seq_range(spark, tmp_path, monkeypatch):
    monkeypatch.setenv("SBPY_FUSED_STATE", "snapshot")
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    journal.append([("a" if i % 3 else "b", {"x": i}) for i in range(12_000)])  # >= ranges_from (10,000)
    handle = start_query(spark, _spec(tmp_path, got))
    handle.process_all_available()
    assert handle._query.lastProgress["numInputRows"] == 1  # Spark moved one range row
    assert handle.last_progress["numInputRows"] == 12_000  # reported in journal seqs
    outs = got.kind("out")
    assert [r["seq"] for r in outs] == list(range(1, 12_001))
    assert [r["data"]["n"] for r in outs[:3]] == [1, 2, 3] and outs[-1]["data"]["n"] == 12_000
    handle.stop()
