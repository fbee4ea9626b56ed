"""The ``sbpy_journal`` streaming source: exactly the entries up to HEAD, in seq order."""
from __future__ import annotations

import pytest

from sbpy.bql.spark import journal_format as jf

from sbpy.bql.spark.testing import TestJournal

pytestmark = pytest.mark.spark


def _start(spark, journal_dir, inputs, checkpoint, sink, **options):
    reader = spark.readStream.format("sbpy_journal").option("dir", str(journal_dir)).option("inputs", inputs)
    for key, value in options.items():
        reader = reader.option(key, str(value))

    def collect(batch_df, batch_id):
        sink.append(sorted(tuple(r) for r in batch_df.collect()))

    return (reader.load().writeStream.option("checkpointLocation", str(checkpoint))
            .foreachBatch(collect).start())


def test_reads_up_to_head_in_order(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    journal.append([("a", {"x": 1}), ("b", {"y": b"\x01"}), ("a", {"x": 2}), ("c", {"z": 0})])
    # an entry beyond HEAD (being written) is not read
    with open(jf.node_log_path(journal.dir, "a"), "a") as f:
        f.write(jf.encode_entry(99, 0, {"x": 99}) + "\n")
    batches: list[list[tuple]] = []
    query = _start(spark, journal.dir, "a,b", tmp_path / "ck", batches)
    query.processAllAvailable()
    rows = [r for b in batches for r in b]
    assert [(r[0], r[1]) for r in rows] == [(1, "a"), (2, "b"), (3, "a")]
    assert jf.decode_data(rows[1][3]) == {"y": b"\x01"} and rows[1][2] == 2000 and rows[1][4] is False
    query.stop()


def test_appends_and_restart(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    journal.append([("a", {"i": 1}), ("a", {"i": 2})])
    batches: list[list[tuple]] = []
    query = _start(spark, journal.dir, "a", tmp_path / "ck", batches)
    query.processAllAvailable()
    journal.append([("a", {"i": 3}), ("a", None)])
    query.processAllAvailable()
    query.stop()
    journal.append([("a", {"i": 5})])
    query = _start(spark, journal.dir, "a", tmp_path / "ck", batches)  # resumes from the checkpoint
    query.processAllAvailable()
    seqs = [r[0] for b in batches for r in b]
    assert seqs == [1, 2, 3, 4, 5]
    end_rows = [r for b in batches for r in b if r[4]]
    assert [(r[0], r[3]) for r in end_rows] == [(4, None)]


def test_start_seq_and_max_seqs(spark, tmp_path):
    journal = TestJournal(tmp_path / "journal")
    journal.append([("a", {"i": i}) for i in range(10)])
    batches: list[list[tuple]] = []
    query = _start(spark, journal.dir, "a", tmp_path / "ck", batches, start_seq=4, max_seqs=2)
    query.processAllAvailable()
    assert [[r[0] for r in b] for b in batches if b] == [[5, 6], [7, 8], [9, 10]]
