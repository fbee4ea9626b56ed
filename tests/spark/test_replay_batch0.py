"""A crash after a micro-batch's sink write but before Spark's commit: the batch is replayed over the
same journal range on restart, even for batch 0 (whose start Spark does not log) and even when the
journal HEAD has moved on meanwhile."""
from __future__ import annotations

import shutil

import pytest

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.operator import StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.testing import TestJournal, running_count


def test_pin_start_seq_records_the_first_start(tmp_path):
    ck = tmp_path / "ck"
    assert jf.pin_start_seq(ck, 7) == 7
    assert jf.pin_start_seq(ck, 42) == 7  # a restart gets the first start back
    assert (ck / jf.START_SEQ_FILE).exists()
    assert jf.pin_start_seq(tmp_path / "other", 42) == 42


@pytest.mark.spark
def test_batch_0_replayed_after_crash_before_commit(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    rows: list[tuple[int, dict]] = []

    def spec(start_seq: int) -> QuerySpec:
        return QuerySpec(query_id="t.replay", journal_dir=tmp_path / "journal", inputs=("a",),
                         stages=[StageSpec("s", "", ("a",), factory=running_count)],
                         checkpoint_dir=tmp_path / "ck", start_seq=start_seq, topology="t",
                         on_batch=lambda bid, rs: rows.extend((bid, r) for r in rs if r["kind"] == "out"))

    journal.append([("a", {"x": 1}), ("a", {"x": 2})])
    handle = start_query(spark, spec(0))
    handle.process_all_available()
    handle.stop()
    assert [(b, r["data"]["n"]) for b, r in rows] == [(0, 1), (0, 2)]
    # the crash: batch 0 reached the sink, Spark's commit of it did not
    shutil.rmtree(tmp_path / "ck" / "commits")
    journal.append([("a", {"x": 3})])
    handle = start_query(spark, spec(3))  # a restarted topology asks for its current HEAD
    handle.process_all_available()
    handle.stop()
    got = [(b, r["data"]["n"], r["data"]["last"]["x"]) for b, r in rows]
    assert got[:2] == [(0, 1, 1), (0, 2, 2)]
    assert got[2:4] == [(0, 1, 1), (0, 2, 2)]  # batch 0 again, same range, same outputs
    assert got[4:] == [(1, 3, 3)]  # and the state it left is the one batch 1 continues from
