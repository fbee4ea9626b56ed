"""Large native batches for a JSON sink, written by the executors (``native_written``), equal the kernel.

A journal of file segments whose lines the native tier decides (numbers, strings, CRLF endings, lines
that pass the first stage but not the second: skipped rows the driver counts) and an end marker runs
through a two-stage native chain in micro-batches of two partitions each (``journal_source.MIN_PIECE``
seqs or more), with
``WRITE_MIN_SEQS`` at 0 (every batch written and read back) — the marked lines split out by slices or,
with ``FEW_MARKS`` at 0, by numpy masks — and at its default (every batch through Arrow): both give the
sequential kernel's lines in order, its stage counters and its end rows, and no written folder stays.
A journal with lines the native tier refuses makes each batch fall back to the Arrow path, with the
same result. ``read_rows`` itself is checked on hand-made files.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from sbpy.bql.plan import plan_query
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.bql.spark import native_written as nw
from sbpy.bql.spark.compile import query_spec_stages
from sbpy.bql.spark.native_collect import NativeCollector
from sbpy.bql.spark.native_query import start_native_query
from sbpy.bql.spark.native_udf import status
from sbpy.bql.spark.query import QuerySpec
from sbpy.bql.spark.stateless_query import EncodedBatch, chain_pipeline
from sbpy.server.journal import JournalWriter

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")]

CHAIN = [
    ("s1", 'SELECT RSTREAM id, price, name FROM src [RANGE 1 TUPLES] WHERE price < 8', ["src"]),
    ("s2", "SELECT RSTREAM name, price * 2 AS p2, id FROM s1 [RANGE 1 TUPLES] WHERE id % 3 != 0", ["s1"]),
]


def _clean_line(i: int) -> bytes:
    end = b"\r\n" if i % 5 == 0 else b"\n"
    return b'{"id": %d, "price": %s, "name": "n%d"}' % (i, b"%d.25" % (i % 11), i % 7) + end


def _refused_line(i: int) -> bytes:
    return b'{"id": %d, "price": 1, "name": "\\u0073"}\n' % i if i % 97 == 0 else _clean_line(i)


def _journal(root, line, n=60_000):
    writer = JournalWriter(root / "journal", fsync=False)
    path = root / "data.jsonl"
    raw = b"".join(line(i) for i in range(n))
    path.write_bytes(raw)
    start, first = 0, 1
    while start < len(raw):  # segments of ~20 kB, cut at newlines
        end = raw.find(b"\n", min(start + 20_000, len(raw) - 1)) + 1 or len(raw)
        chunk = raw[start:end]
        writer.append_segment("src", 1_000 * (start + 1), js.make_segment(str(path), start, chunk, first, 0, None))
        first += chunk.count(b"\n")
        start = end
    writer.end("src")
    writer.close()
    return root / "journal", jf.read_head(root / "journal")


def _expected(journal_dir, head):
    """The kernel's sink lines in order, its stage counters and its other rows."""
    stages = query_spec_stages(plan_query(["src"], CHAIN))
    rows = chain_pipeline("ref-written", stages, "t", "json").run(jf.read_entries(journal_dir, ["src"], 0, head))
    lines = [r[5] for r in rows if r[0] == "out"]
    stats = Counter()
    for r in rows:
        if r[0] == "stat":
            data = jf.decode_data(r[5])
            stats[(r[1], "sent")] += data["sent"]
            stats[(r[1], "received")] += sum(data["received"].values())
    return lines, stats, sorted((r[0], r[1], r[2]) for r in rows if r[0] not in ("out", "stat"))


def _got(batches):
    lines, stats, others = [], Counter(), []
    for rows in batches:
        assert isinstance(rows, EncodedBatch)
        lines.extend(rows.lines)
        for r in rows.others:
            if r["kind"] == "stat":
                stats[(r["node"], "sent")] += r["data"]["sent"]
                stats[(r["node"], "received")] += sum(r["data"]["received"].values())
            else:
                others.append((r["kind"], r["node"], r["seq"]))
    return lines, stats, sorted(others)


def _run(spark, tmp_path, journal_dir, name):
    batches = []
    plan = plan_query(["src"], CHAIN)
    spec = QuerySpec(query_id=f"t.written.{name}", journal_dir=journal_dir, inputs=("src",),
                     stages=query_spec_stages(plan), checkpoint_dir=tmp_path / f"ck-{name}", topology="t",
                     on_batch=lambda batch_id, rows: batches.append(rows), plan=plan, max_seqs=25_000,
                     out_format="json")
    handle = start_native_query(spark, spec)
    try:
        handle.process_all_available()
        assert handle.error is None
    finally:
        handle.stop()
    folder = tmp_path / f"ck-{name}" / nw.FOLDER
    assert not folder.exists() or not any(folder.iterdir())  # every written batch removed
    return batches


def _counting(monkeypatch):
    """Count the batches written and read back (``read_rows``), their files, and the batches collected
    through Arrow (``NativeCollector._collected``)."""
    seen = Counter()
    read_rows, collected = nw.read_rows, NativeCollector._collected

    def counted_read(files):
        seen["files"] += len(files)
        seen["written"] += 1
        return read_rows(files)

    def counted_collect(self, batch_df):
        seen["arrow"] += 1
        return collected(self, batch_df)

    monkeypatch.setattr(nw, "read_rows", counted_read)
    monkeypatch.setattr(NativeCollector, "_collected", counted_collect)
    return seen


@pytest.mark.parametrize("few_marks", [nw.FEW_MARKS, 0], ids=["slices", "numpy"])
def test_written_batches_equal_the_kernel(spark, tmp_path, monkeypatch, few_marks):
    journal_dir, head = _journal(tmp_path, _clean_line)
    expected = _expected(journal_dir, head)
    assert len(expected[0]) > 25_000 and expected[1][("s2", "received")] > expected[1][("s2", "sent")]
    monkeypatch.setattr(nw, "FEW_MARKS", few_marks)
    monkeypatch.setattr(nw, "WRITE_MIN_SEQS", 0)
    seen = _counting(monkeypatch)
    written = _run(spark, tmp_path, journal_dir, "written")
    assert seen["written"] >= 3 and seen["files"] > seen["written"]  # several batches, several partitions
    assert seen["arrow"] == 0  # every batch's rows came from the files
    assert _got(written) == expected
    monkeypatch.setattr(nw, "WRITE_MIN_SEQS", 10**9)
    assert _got(_run(spark, tmp_path, journal_dir, "arrow")) == expected
    assert seen["arrow"] >= 3 and seen["written"] >= 3


def test_a_batch_with_refused_lines_falls_back_to_arrow(spark, tmp_path, monkeypatch):
    journal_dir, head = _journal(tmp_path, _refused_line)
    expected = _expected(journal_dir, head)
    monkeypatch.setattr(nw, "WRITE_MIN_SEQS", 0)
    seen = _counting(monkeypatch)
    assert _got(_run(spark, tmp_path, journal_dir, "refused")) == expected
    assert seen["written"] >= 3 and seen["arrow"] == seen["written"]  # each written, then through Arrow


@pytest.mark.parametrize("few_marks", [nw.FEW_MARKS, 0], ids=["slices", "numpy"])
def test_read_rows_splits_marked_lines(tmp_path, monkeypatch, few_marks):
    monkeypatch.setattr(nw, "FEW_MARKS", few_marks)
    one, two, empty = tmp_path / "part-00000", tmp_path / "part-00001", tmp_path / "part-00002"
    one.write_bytes(b'\x01{"k":0,"seq":1,"data":"x"}\n{"a":1}\n{"a":2}\n\x01{"k":3}\n{"a":3}\n')
    two.write_bytes(b'{"a":"\x01"}\n\x01{"k":2,"seq":9}\n\x01{"k":2}\n')
    empty.write_bytes(b"")
    rows = nw.read_rows([one, two, empty])
    assert list(rows.lines) == ['{"a":1}', '{"a":2}', '{"a":3}', '{"a":"\x01"}'] and len(rows.lines) == 4
    assert rows.marked == [{"k": 0, "seq": 1, "data": "x"}, {"k": 3}, {"k": 2, "seq": 9}, {"k": 2}]
    (tmp_path / "bad").write_bytes(b'{"a":1}')
    with pytest.raises(ValueError, match="without a newline"):
        nw.read_rows([tmp_path / "bad"])


def _cluster_check(monkeypatch):
    """Check the files as on a cluster (one file per partition), in this local session."""
    monkeypatch.setattr(nw, "partitions_to_check", lambda batch_df: batch_df.rdd.getNumPartitions())


def test_on_a_cluster_every_partition_file_is_there(spark, tmp_path, monkeypatch):
    journal_dir, head = _journal(tmp_path, _clean_line)
    monkeypatch.setattr(nw, "WRITE_MIN_SEQS", 0)
    _cluster_check(monkeypatch)
    seen = _counting(monkeypatch)
    assert _got(_run(spark, tmp_path, journal_dir, "cluster")) == _expected(journal_dir, head)
    assert seen["written"] >= 3 and seen["arrow"] == 0


def test_a_partition_file_the_driver_cannot_see_sends_the_query_to_arrow(spark, tmp_path, monkeypatch, caplog):
    """An executor writing to a disk of its own: its file is not in the driver's folder. The batch is
    collected through Arrow (no row lost) and so is every later batch of the query."""
    journal_dir, head = _journal(tmp_path, _clean_line)
    monkeypatch.setattr(nw, "WRITE_MIN_SEQS", 0)
    _cluster_check(monkeypatch)
    write_rows = nw.write_rows
    writes = Counter()

    def losing_one(batch_df, folder):
        files = write_rows(batch_df, folder)
        writes["n"] += 1
        files[-1].unlink()
        return files[:-1]

    monkeypatch.setattr(nw, "write_rows", losing_one)
    seen = _counting(monkeypatch)
    assert _got(_run(spark, tmp_path, journal_dir, "lost")) == _expected(journal_dir, head)
    assert writes["n"] == 1 and seen["written"] == 0 and seen["arrow"] >= 3
    assert any("lacks partitions' files" in r.getMessage() for r in caplog.records)


def test_complete():
    files = [Path("part-00000"), Path("part-00001")]
    assert nw.complete(files, None) and nw.complete(files, 2) and not nw.complete(files, 3)
