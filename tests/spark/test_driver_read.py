"""A driver-execution batch read from the journal on the driver equals the batch Spark would have read.

``driver_query`` (``read="journal"``) takes a micro-batch's seq range from Spark's offset log and reads the
journal itself instead of collecting the batch's DataFrame (``read="spark"``, the reference). Checked here:

- without Spark (hypothesis): over random journals (several node logs, rolled files, file segments with
  bad lines, end markers, tagged values) and random ranges, ``journal_batch_rows`` gives exactly the rows
  ``sbpy_journal``'s partitions yield for that range, in the order the Spark path sorts them to — with
  each tuple's data already decoded (what ``Pipeline.run`` decodes the Spark path's texts to);
- ``batch_range`` reads Spark's offset log (and the pinned start seq for batch 0);
- on Spark: a windowed chain in several micro-batches gives, batch by batch, the same rows in both modes
  and the sequential kernel's rows; a batch replayed after a crash (sink written, commit lost) reads the
  same range again although HEAD moved on, and the window state continues exactly once.
"""
from __future__ import annotations

import datetime as dt
import gc
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sbpy.bql.plan import Execution, plan_query
from sbpy.bql.runtime import gc_pause
from sbpy.bql.spark import driver_query
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.bql.spark.compile import query_spec_stages
from sbpy.bql.spark.journal_source import JournalStreamReader
from sbpy.bql.spark.operator import Pipeline
from sbpy.bql.spark.query import QuerySpec
from sbpy.server.journal import JournalWriter
from sbpy.server.nodes.source_node import wait_until

_T0 = dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)

CHAIN = [
    ("s1", "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8", ["src"]),
    ("s2", "SELECT ISTREAM count(*) AS n, max(id) AS m FROM s1 [RANGE 3 TUPLES]", ["s1"]),
]

# ---------------------------------------------------------------- journals (no Spark)

_op = st.one_of(
    st.tuples(st.just("t"), st.sampled_from(["a", "b"]), st.integers(1, 12)),  # n tuples on a node
    st.tuples(st.just("s"), st.just("f"), st.integers(1, 15)),  # a file segment of n lines
    st.tuples(st.just("e"), st.sampled_from(["a", "b", "f"]), st.just(0)),  # an end marker
)


def _write(writer: JournalWriter, ops: list, seg_file: Path) -> None:
    """Apply ``ops``; segment lines include blank lines and lines that are no tuple."""
    lines = [b"\n" if i % 7 == 3 else b"not json\n" if i % 5 == 4 else orjson.dumps({"line": i, "price": i % 11}) + b"\n"
             for i in range(400)]
    seg_file.write_bytes(b"".join(lines))
    offset, line = 0, 1
    ended: set[str] = set()
    for kind, node, n in ops:
        if node in ended:
            continue
        if kind == "t":
            writer.append(node, [(writer.head * 10, {"v": writer.head + i, "x": [i, None, "s"]} if i % 3 else
                                  {"v": writer.head + i, "$k": {"at": _T0, "inf": float("inf")}, "b": b"\x00$"})
                                 for i in range(n)])
        elif kind == "e":
            writer.end(node)
            ended.add(node)
        else:
            n = min(n, 400 - line + 1)
            if n <= 0:
                continue
            chunk = b"".join(lines[line - 1:line - 1 + n])
            writer.append_segment(node, 7, js.make_segment(str(seg_file), offset, chunk, line, 0, None))
            offset, line = offset + len(chunk), line + n


def _decoded(row: tuple) -> tuple:
    """``row`` with its data as ``Pipeline.run`` takes it in (a text decoded, a map as it is)."""
    return (*row[:3], jf.decode_data(row[3]) if type(row[3]) is str else row[3], *row[4:])


def _read_rows(reader: JournalStreamReader, partition) -> list[tuple]:
    """A partition's rows as Spark gets them from ``read``: its Arrow record batches' rows (or its tuples)."""
    out: list[tuple] = []
    for item in reader.read(partition):
        out.extend([item] if isinstance(item, tuple) else [tuple(r.values()) for r in item.to_pylist()])
    return out


def _spark_rows(journal: Path, inputs: tuple[str, ...], after: int, upto: int, pieces: int) -> list[tuple]:
    """What the Spark path hands ``DriverPipeline``: every partition's rows, as ``_journal_rows`` sorts them."""
    reader = JournalStreamReader({"dir": str(journal), "inputs": ",".join(inputs), "partitions": str(pieces),
                                  "min_piece": "3"})
    rows = [r for p in reader.partitions({"seq": after}, {"seq": upto}) for r in _read_rows(reader, p)]
    rows.sort(key=lambda r: r[0])
    return [(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=14), roll=st.sampled_from([64, 300, 1 << 30]),
       cut=st.tuples(st.floats(0, 1), st.floats(0, 1)), pieces=st.integers(1, 3),
       inputs=st.sampled_from([("a",), ("a", "b"), ("f", "b"), ("a", "b", "f")]))
def test_journal_read_equals_the_sources_partitions(tmp_path_factory, ops, roll, cut, pieces, inputs):
    tmp = tmp_path_factory.mktemp("j")
    writer = JournalWriter(tmp / "journal", fsync=False, roll_bytes=roll)
    _write(writer, ops, tmp / "seg.jsonl")
    head = jf.read_head(tmp / "journal")
    after, upto = sorted(int(c * head) for c in cut)
    got = driver_query.journal_batch_rows(str(tmp / "journal"), inputs, (after, upto))
    want = _spark_rows(tmp / "journal", inputs, after, upto, pieces)
    # the driver's rows carry each map already decoded; the Pipeline decodes the Spark path's texts
    assert [_decoded(r) for r in got] == [_decoded(r) for r in want]
    assert not any(type(r[3]) is str for r in got)  # every tuple's data came decoded
    assert all(after < r[0] <= upto for r in got)
    assert [r[0] for r in got] == sorted(r[0] for r in got)
    writer.close()


def _offsets(ck: Path, batch_id: int, seq: int) -> None:
    """An offset-log entry as Spark writes it (version, metadata, one line per source)."""
    (ck / "offsets").mkdir(parents=True, exist_ok=True)
    (ck / "offsets" / str(batch_id)).write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":1}}\n{{"seq":{seq}}}')


def test_batch_range_reads_the_offset_log(tmp_path):
    ck = tmp_path / "ck"
    assert driver_query.batch_range(ck, 0) is None  # nothing logged: the Spark read takes the batch
    jf.pin_start_seq(ck, 4)
    _offsets(ck, 0, 9)
    _offsets(ck, 1, 15)
    assert driver_query.batch_range(ck, 0) == (4, 9)
    assert driver_query.batch_range(ck, 1) == (9, 15)
    assert driver_query.batch_range(ck, 2) is None
    (ck / "offsets" / "1").write_text("v1\n{}\n")  # torn: not a batch we can read
    assert driver_query.batch_range(ck, 1) is None


def test_progress_counts_the_rows_read_on_the_driver():
    counts = driver_query.ReadCounts()
    counts.record(3, 5)
    spark_says = {"batchId": 3, "numInputRows": 0, "batchDuration": 250, "sources": [{"numInputRows": 0}]}
    filled = counts.fill(spark_says)
    assert (filled["numInputRows"], filled["processedRowsPerSecond"], filled["sources"]) == (5, 20.0, [{"numInputRows": 5}])
    assert spark_says["numInputRows"] == 0  # Spark's report itself is left alone
    assert counts.fill({"batchId": 4, "numInputRows": 0}) == {"batchId": 4, "numInputRows": 0}  # not read here
    assert counts.fill({"batchId": 3, "numInputRows": 7})["numInputRows"] == 7  # Spark counted: its count
    assert counts.fill(None) is None
    for b in range(counts.KEEP + 10):
        counts.record(b, 1)
    assert counts.fill({"batchId": 0})["batchId"] == 0 and "numInputRows" not in counts.fill({"batchId": 0})


def test_an_unknown_read_mode_is_refused():
    with pytest.raises(ValueError, match="read must be one of"):
        driver_query.start_driver_query(None, None, None, read="executor")


# ---------------------------------------------------------------- on Spark

ROWS = [{"id": 1, "price": 3}, {"id": 2, "price": 9.5}, {"id": 3}, {"id": 4, "price": "x"},
        {"id": 5, "price": 7.0}, {"id": 6, "price": None}, {"id": 7, "price": 2}, {"id": 8, "price": 8},
        {"id": 9, "price": -1.5}, {"id": 10, "price": 1}, {"id": 11, "price": 0}]


def _summary(rows: list[dict]) -> list[tuple]:
    return [(r["kind"], r["node"], r["seq"], r["data"], r["error"]) for r in rows if r["kind"] != "stat"]


class _Counting:
    """Wraps ``driver_query.journal_batch_rows`` to count the batches read on the driver."""

    def __init__(self) -> None:
        self.calls = 0
        self.inner = driver_query.journal_batch_rows

    def __call__(self, *args):
        self.calls += 1
        return self.inner(*args)


def _run(spark, journal: Path, ck: Path, read: str, start_seq: int = 0,
         input_rows: list | None = None) -> list[tuple[int, list[dict]]]:
    plan = plan_query(["src"], CHAIN, force=Execution.DRIVER)
    assert plan.execution is Execution.DRIVER
    batches: list[tuple[int, list[dict]]] = []
    spec = QuerySpec(query_id=f"t.read-{read}", journal_dir=journal, inputs=("src",),
                     stages=query_spec_stages(plan), checkpoint_dir=ck, topology="t", start_seq=start_seq,
                     on_batch=lambda batch_id, rows: batches.append((int(batch_id), list(rows))), plan=plan,
                     max_seqs=3)
    handle = driver_query.start_driver_query(spark, spec, None, read=read)
    try:
        handle.process_all_available()
        assert handle.error is None
        if input_rows is not None:  # Spark reports a batch's progress just after its commit
            def reported() -> int:
                return sum(p["numInputRows"] for p in handle._query.recentProgress)
            wait_until(lambda: reported() >= 12, 60)
            input_rows.append(reported())
    finally:
        handle.stop()
    return batches


@pytest.mark.spark
@pytest.mark.parametrize("read", ["journal", "spark"])
def test_both_reads_give_the_sequential_kernels_rows_batch_by_batch(spark, tmp_path, monkeypatch, read):
    journal = tmp_path / "journal"
    writer = JournalWriter(journal, fsync=False, roll_bytes=200)
    writer.append("src", [(1000 * i, r) for i, r in enumerate(ROWS[:5])])
    writer.append("src", [(1000 * i, r) for i, r in enumerate(ROWS[5:], 5)])
    writer.end("src")
    writer.close()
    counting = _Counting()
    monkeypatch.setattr(driver_query, "journal_batch_rows", counting)
    collector: list[bool] = []  # whether the cyclic collector ran during each batch's pipeline
    plain_run = Pipeline.run
    monkeypatch.setattr(Pipeline, "run", lambda self, rows: (collector.append(gc.isenabled()), plain_run(self, rows))[1])
    input_rows: list = []
    got = _run(spark, journal, tmp_path / f"ck-{read}", read, input_rows=input_rows)
    assert collector and not any(collector)  # paused while a batch runs (gc_pause) ...
    assert gc.isenabled() and gc_pause.depth() == 0  # ... and enabled again after it

    reference = Pipeline(query_spec_stages(plan_query(["src"], CHAIN)), "t")
    expected = _summary(driver_query.output_dicts(reference.run(jf.read_entries(journal, ["src"], 0,
                                                                                  writer.head))))
    assert _summary([r for _, rows in got for r in rows]) == expected
    assert len(got) == 4  # 12 seqs, at most 3 a batch
    assert counting.calls == (len(got) if read == "journal" else 0)
    # both report the batches' input rows (12 journal entries: 11 tuples and the end marker)
    assert input_rows == [12]
    assert any(k == "out" for k, *_ in expected) and any(k == "dropped" for k, *_ in expected)


@pytest.mark.spark
def test_a_replayed_batch_reads_its_logged_range_again(spark, tmp_path):
    """A crash after a batch's sink write but before its commit: on restart the batch is replayed over
    the range in its offset log — HEAD has moved meanwhile — and the window continues exactly once."""
    journal = tmp_path / "journal"
    writer = JournalWriter(journal, fsync=False)
    writer.append("src", [(1000 * i, r) for i, r in enumerate(ROWS[:4])])
    writer.append("src", [(1000 * i, r) for i, r in enumerate(ROWS[4:7], 4)])
    results = {}
    for read in ("journal", "spark"):
        ck = tmp_path / f"ck-{read}"
        first = _run(spark, journal, ck, read)
        last = max(b for b, _ in first)
        for name in (str(last), f".{last}.crc"):
            (ck / "commits" / name).unlink(missing_ok=True)
        results[read] = (first, ck)
    writer.append("src", [(1000 * i, r) for i, r in enumerate(ROWS[7:], 7)])
    writer.close()
    reference = Pipeline(query_spec_stages(plan_query(["src"], CHAIN)), "t")
    expected = _summary(driver_query.output_dicts(reference.run(jf.read_entries(journal, ["src"], 0,
                                                                                  writer.head))))
    replays = {}
    for read, (first, ck) in results.items():
        again = _run(spark, journal, ck, read, start_seq=writer.head)
        last_id, last_rows = first[-1]
        assert again[0][0] == last_id  # the uncommitted batch runs again ...
        assert _summary(again[0][1]) == _summary(last_rows)  # ... over the same range, from the same state
        assert len(again) > 1  # and the rows appended meanwhile follow in later batches
        replays[read] = [(b, _summary(rows)) for b, rows in first + again]
        # the outputs once each (the replayed batch counted once) are the sequential kernel's
        once = [row for _, rows in first for row in _summary(rows)] + \
            [row for _, rows in again[1:] for row in _summary(rows)]
        assert once == expected
    assert replays["journal"] == replays["spark"]
