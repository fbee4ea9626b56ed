"""The ``sbpy_journal`` streaming source: exactly the entries up to HEAD, in seq order."""
from __future__ import annotations

import pytest

from sbpy.bql.spark import journal_format as jf

from sbpy.bql.spark.testing import TestJournal

pytestmark = pytest.mark.spark


def _start(spark, journal_dir, inputs, checkpoint, sink, parts=None, **options):
    reader = spark.readStream.format("sbpy_journal").option("dir", str(journal_dir)).option("inputs", inputs)
    for key, value in options.items():
        reader = reader.option(key, str(value))

    def collect(batch_df, batch_id):
        if parts is not None:
            parts.append(batch_df.rdd.getNumPartitions())
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


def test_split_range():
    from sbpy.bql.spark.journal_source import split_range

    assert split_range(0, 19_999, 2) == [(0, 19_999)]  # never pieces under 10k seqs
    assert split_range(0, 20_000, 2) == [(0, 10_000), (10_000, 20_000)]
    assert split_range(5, 100_005, 4) == [(5, 25_005), (25_005, 50_005), (50_005, 75_005), (75_005, 100_005)]
    assert split_range(0, 10, 3, min_piece=3) == [(0, 3), (3, 6), (6, 10)]


def test_file_segments_in_several_partitions(spark, tmp_path):
    from sbpy.plugins.builtin.sources import FileSource
    from sbpy.server.journal import JournalWriter

    src = tmp_path / "in.jsonl"
    src.write_text("".join(("oops" if i % 100 == 7 else '{"i": %d}' % i) + "\n" for i in range(3000)))
    w = JournalWriter(tmp_path / "journal")

    class Ctx:
        resume = None

        def emit_segment(self, seg):
            w.append_segment("f", 1, seg)

        def rewind_requested(self):
            return False

    FileSource({"path": str(src)}).run(Ctx())
    w.end("f")
    batches: list[list[tuple]] = []
    parts: list[int] = []
    query = _start(spark, w.dir, "f", tmp_path / "ck", batches, parts, partitions=3, min_piece=500)
    query.processAllAvailable()
    query.stop()
    rows = sorted(r for b in batches for r in b)
    assert parts[0] == 3
    assert [r[0] for r in rows] == list(range(1, 3002))
    assert [jf.decode_data(r[3])["i"] for r in rows if r[3] is not None] == [i for i in range(3000) if i % 100 != 7]
    errors = [r for r in rows if r[5] is not None]
    assert len(errors) == 30 and errors[0][5].startswith(f"file source: {src}:8: cannot parse a line")
    assert rows[-1][4] is True


def test_ranges_option_sends_one_row_per_batch_that_expands_to_its_entries(spark, tmp_path):
    from sbpy.bql.spark.journal_source import RANGE_INPUT, expand_ranges

    journal = TestJournal(tmp_path / "journal")
    journal.append([("a", {"x": i}) for i in range(30)] + [("b", {"y": 1})])
    batches: list[list[tuple]] = []
    query = _start(spark, journal.dir, "a,b", tmp_path / "ck", batches, ranges=1, max_seqs=20, ranges_from=15)
    query.processAllAvailable()
    query.stop()
    # 20 seqs: one range row; the last 11 (fewer than ranges_from) come as rows
    assert batches[0] == [(20, RANGE_INPUT, 0, None, False, None)]
    assert batches[1] == sorted(jf.read_entries(journal.dir, ["a", "b"], 20, 31))
    rows = [r for b in batches for r in expand_ranges(b, str(journal.dir), ("a", "b"))]
    assert rows == jf.read_entries(journal.dir, ["a", "b"], 0, 31)
    assert [r[0] for r in rows] == list(range(1, 32))
    plain = [(1, "a", 0, "{}", False, None)]
    assert expand_ranges(plain, str(journal.dir), ("a",)) is plain


def test_range_progress_counts_journal_seqs():
    from sbpy.bql.spark.journal_source import count_range_rows

    progress = {"batchId": 2, "numInputRows": 1, "batchDuration": 500,
                "sources": [{"startOffset": '{"seq":100}', "endOffset": {"seq": 350}, "numInputRows": 1}]}
    out = count_range_rows(progress)
    assert (out["numInputRows"], out["processedRowsPerSecond"], out["sources"][0]["numInputRows"]) == (250, 500.0, 250)
    assert progress["numInputRows"] == 1  # not changed in place
    assert count_range_rows(None) is None and count_range_rows({"sources": []}) == {"sources": []}


def test_a_read_yields_arrow_batches_of_the_same_rows():
    """``arrow_batches``: the rows column by column, in order, ``READ_BATCH`` at a time; NULLs (an end
    marker's data, a missing error) and non-ASCII text kept; the schema the one pyspark checks a reader's
    batches against (``to_arrow_schema`` of ``SCHEMA``, which the Spark tests above read through)."""
    from sbpy.bql.spark import journal_source as js

    rows = [(i, "a" if i % 3 else "b", 1000 * i, None if i % 7 == 0 else f'{{"x":{i},"s":"é\\u00e9"}}',
             i % 7 == 0, "bad line" if i % 11 == 0 else None) for i in range(1, 26)]
    batches = list(js.arrow_batches(rows, size=10))
    assert [b.num_rows for b in batches] == [10, 10, 5]
    assert all(b.schema.equals(js.arrow_schema()) for b in batches)
    got = [tuple(r.values()) for b in batches for r in b.to_pylist()]
    assert got == rows
    assert list(js.arrow_batches([])) == []
