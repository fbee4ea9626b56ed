"""How ``sbpy_native`` sizes micro-batches (``NativeStreamReader.latestOffset``), without a session.

The reader takes HEAD, capped at ``max_seqs`` seqs after the batch's start — and a rest of at most 1/8
of the cap as well, so a file of exactly the cap's lines and its end marker are one micro-batch. Each
test journals tuples with the server's ``JournalWriter`` and asks the reader the offsets Spark asks.
"""
from __future__ import annotations

import pytest
from pyspark.sql.streaming.datasource import ReadMaxRows

from sbpy.bql.spark.journal_source import JournalStreamReader
from sbpy.bql.spark.native_source import MAX_SEQS, TAIL_SLACK, NativeStreamReader
from sbpy.server.journal import JournalWriter


def _journal(tmp_path, tuples: int, end: bool):
    writer = JournalWriter(tmp_path / "j", fsync=False)
    writer.append("src", [(1, {"i": i}) for i in range(tuples)])
    if end:
        writer.end("src")
    writer.close()
    return str(tmp_path / "j")


def _reader(journal: str, **options) -> NativeStreamReader:
    return NativeStreamReader({"dir": journal, "inputs": "src", "chain": "unused", "lines": "jvm",
                               **{k: str(v) for k, v in options.items()}})


def _batches(reader) -> list[int]:
    """The end offsets Spark would run, batch after batch, until HEAD."""
    limit, start, ends = reader.getDefaultReadLimit(), reader.initialOffset(), []
    while True:
        end = reader.latestOffset(start, limit)
        if end["seq"] == start["seq"]:
            return ends
        ends.append(end["seq"])
        start = end


@pytest.mark.parametrize("cap", [100, 1000])
def test_the_end_marker_joins_the_last_full_batch(tmp_path, cap):
    journal = _journal(tmp_path, cap, end=True)  # cap tuples and the end marker: cap + 1 seqs
    assert _batches(_reader(journal, max_seqs=cap)) == [cap + 1]
    # the journal reader of the Python tiers keeps its cap: a second batch for the marker alone
    plain = JournalStreamReader({"dir": journal, "inputs": "src", "max_seqs": str(cap)})
    assert _batches(plain) == [cap, cap + 1]


@pytest.mark.parametrize("tuples, expected", [
    (250, [100, 200, 250]),                # a rest of 50 > 100/8: its own batch
    (212, [100, 212]),                      # a rest of 12 <= 100/8: taken along
    (213, [100, 200, 213]),                 # 13 > 12: not
    (100, [100]), (1, [1]), (0, []),
])
def test_the_cap_is_stretched_by_at_most_an_eighth(tmp_path, tuples, expected):
    assert _batches(_reader(_journal(tmp_path, tuples, end=False), max_seqs=100)) == expected


def test_defaults(tmp_path):
    reader = _reader(_journal(tmp_path, 5, end=True))
    assert reader.max_seqs == MAX_SEQS and TAIL_SLACK == 8
    assert isinstance(reader.getDefaultReadLimit(), ReadMaxRows)
    assert reader.latestOffset(None, None) == {"seq": 6} and _batches(reader) == [6]
    # a small cap has no slack: every batch keeps it
    assert _batches(_reader(_journal(tmp_path / "b", 20, end=True), max_seqs=7)) == [7, 14, 21]
