"""``sbpy_routed``: a keyed plan's first step in the journal reads — the stateless routing (``route``) and
the window router's packing (``pack``) — checked against the router run over the whole range and against
the journal rows themselves; through Spark, a keyed query reads it and reports journal seqs."""
from __future__ import annotations

import random

import orjson
import pytest
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import routed_source as rs
from sbpy.bql.spark.journal_source import READ_BATCH
from sbpy.bql.spark.keyed_buckets import LEAD, bucket_of, group_values
from sbpy.bql.spark.keyed_ops import ALL_KEYS, JournalRouter
from sbpy.bql.spark.keyed_plan import plan_keyed
from sbpy.bql.spark.operator import StageSpec
from sbpy.bql.spark.testing import TestJournal

MATCH = ("SELECT RSTREAM * FROM ticks MATCH_RECOGNIZE (PARTITION BY sym ORDER BY t MEASURES A.t AS a "
         "ONE ROW PER MATCH PATTERN (A B) DEFINE B AS B.p > PREV(B.p))")
BUCKETS = 3


def _plan():
    plan = plan_keyed([StageSpec("m", MATCH, ("ticks",))], ("ticks",))
    assert plan is not None and not plan.upstream
    return plan


def _journal(tmp_path, n: int) -> TestJournal:
    """``n`` ticks of mixed symbols (a str, an int equal to a float, a missing one) and their end."""
    rng = random.Random(7)
    journal = TestJournal(tmp_path / "journal")
    syms = ["x", "y", 1, 1.0, None]
    rows = []
    for i in range(n):
        row = {"t": i, "p": rng.randint(0, 9)}
        sym = rng.choice(syms)
        if sym is not None:
            row["sym"] = sym
        rows.append(("ticks", row))
    journal.append(rows + [("ticks", None)])
    return journal


def _reader(journal: TestJournal, mode: str) -> rs.RoutedStreamReader:
    return rs.RoutedStreamReader({"dir": str(journal.dir), "inputs": "ticks", "mode": mode,
                                  "keyed": rs.encode_keyed("t.routed", _plan(), "t", BUCKETS)})


def _read(reader: rs.RoutedStreamReader, head: int) -> list:
    parts = reader.partitions({"seq": 0}, {"seq": head})
    assert len(parts) == 2  # the journal reader's seq-range split
    batches = [b for p in parts for b in reader.read(p)]
    assert all(b.schema.equals(rs.arrow_schema(reader.mode)) for b in batches)
    return [tuple(r.values()) for b in batches for r in b.to_pylist()]


def test_route_mode_packs_each_routed_row_into_its_bucket(tmp_path):
    n = 3 * READ_BATCH  # several read chunks per partition
    journal = _journal(tmp_path, n)
    packs = _read(_reader(journal, "route"), journal.seq)
    values = group_values(BUCKETS)
    got = {}
    for value, text in packs:
        for row in orjson.loads(text):
            key = row[10]
            if key != ALL_KEYS:
                assert value == values[bucket_of(key, BUCKETS)], row  # in its own bucket's pack
            got.setdefault(row[2], []).append((value, row[:3] + row[4:]))  # all but idx (per chunk)
    # the router over the whole range, at once: the same rows (the end's ALL_KEYS row in every bucket,
    # bucket 0's copy marked as the one that ends K)
    entries = jf.read_entries(str(journal.dir), ("ticks",), 0, journal.seq)
    want = {}
    for row in JournalRouter(_plan(), "t").run(entries):
        row = list(row)
        copies = range(BUCKETS) if row[10] == ALL_KEYS else [bucket_of(row[10], BUCKETS)]
        for b in copies:
            copy = row[:9] + [LEAD] + row[10:] if row[10] == ALL_KEYS and b == 0 else row
            want.setdefault(row[2], []).append((values[b], copy[:3] + copy[4:]))
    assert sorted(got) == sorted(want) and len(want) == n + 1
    for seq, rows in want.items():
        assert sorted(got[seq], key=repr) == sorted(rows, key=repr)


def test_pack_mode_packs_the_journal_rows_of_each_chunk(tmp_path):
    journal = _journal(tmp_path, 2 * READ_BATCH + 500)
    packs = _read(_reader(journal, "pack"), journal.seq)
    assert {value for value, _ in packs} == {0}
    rows = [tuple(r) for _, text in packs for r in orjson.loads(text)]
    assert rows == jf.read_entries(str(journal.dir), ("ticks",), 0, journal.seq)
    assert max(len(orjson.loads(text)) for _, text in packs) == READ_BATCH


@pytest.mark.parametrize("options, message", [
    ({"mode": "", "keyed": "x"}, "'mode' option"),
    ({"mode": "shuffle", "keyed": "x"}, "'mode' option"),
    ({"mode": "route"}, "'keyed' option"),
    ({"mode": "route", "keyed": "x", "ranges": "1"}, "reads entries, not ranges"),
])
def test_bad_options_are_refused(tmp_path, options, message):
    with pytest.raises(ValueError, match=message):
        rs.RoutedStreamReader({"dir": str(tmp_path), "inputs": "ticks", **options})


UPSTREAM = [StageSpec("f", "SELECT RSTREAM * FROM ticks [RANGE 1 TUPLES] WHERE p >= 0", ("ticks",)),
            StageSpec("m", MATCH.replace("FROM ticks", "FROM f"), ("f",))]


@pytest.mark.spark
@pytest.mark.parametrize("stages, mode", [([StageSpec("m", MATCH, ("ticks",))], "route"), (UPSTREAM, "pack")])
def test_a_keyed_query_reads_packed_rows_and_reports_journal_seqs(spark, tmp_path, stages, mode):
    from sbpy.bql.spark.keyed_query import source_mode
    from sbpy.bql.spark.query import QuerySpec, start_query

    assert source_mode(plan_keyed(stages, ("ticks",))) == mode
    journal = _journal(tmp_path, 500)
    got = []
    spec = QuerySpec(query_id="t.routed", journal_dir=journal.dir, inputs=("ticks",),
                     stages=stages, checkpoint_dir=tmp_path / "ck",
                     on_batch=lambda batch_id, rows: got.extend(rows), topology="t")
    handle = start_query(spark, spec)
    try:
        handle.process_all_available()
        raw = handle._query.lastProgress  # Spark counts what the source sent: packed rows
        assert 0 < raw["numInputRows"] < 50
        assert handle.last_progress["numInputRows"] == journal.seq  # the handle counts journal seqs
        assert sum(p["numInputRows"] for p in handle.recent_progress) == journal.seq
    finally:
        handle.stop()
    assert sorted(r["node"] for r in got if r["kind"] == "end") == sorted(s.node for s in stages)
