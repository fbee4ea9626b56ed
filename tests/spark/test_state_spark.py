"""The logged state layout on Spark (``transformWithStateInPandas``) against the snapshot layout
(``applyInPandasWithState``, ``SBPY_FUSED_STATE=snapshot``): the same journal, the same micro-batch cuts,
a restart from a copy of the checkpoint under another query id (a worker without the warm pipeline:
rebuilt from base + log), a batch whose sink fails after the state was written (rerun from the
previous version), the handed-over snapshot, and the bytes a batch writes."""
from __future__ import annotations

import random
import shutil
import threading

import pytest

from sbpy.bql.spark import handoff
from sbpy.bql.spark.operator import Pipeline, StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.state_log import LAYOUT_ENV, LOGGED, SNAPSHOT, read_layout
from sbpy.bql.spark.testing import TestJournal

pytestmark = pytest.mark.spark

STAGES = [
    StageSpec("a", "SELECT ISTREAM x AS x, y AS y FROM src [RANGE 4 TUPLES] WHERE x % 5 != 0", ("src",)),
    StageSpec("j", "SELECT RSTREAM count(*) AS c, sum(a:x) AS sx, max(o:y) AS my FROM a [RANGE 6 TUPLES], "
                   "other [RANGE 3 TUPLES] AS o WHERE a:y = o:y", ("a", "other")),
]


def _items(rng: random.Random, n: int) -> list[tuple[str, dict]]:
    return [(rng.choice(["src", "src", "other"]), {"x": rng.randint(-9, 9), "y": rng.randint(0, 2)})
            for _ in range(n)]


def _run(spark, tmp_path, layout: str, parts: list[list], monkeypatch) -> tuple[list[tuple], dict]:
    """Each part appended then processed, with max 3 seqs a batch; between part 1 and 2 the checkpoint
    is copied and the query restarted on the copy under another id; part 3's first batch fails in the
    sink once (after the state was written), then the query is restarted."""
    monkeypatch.setenv(LAYOUT_ENV, layout)
    root = tmp_path / layout
    journal = TestJournal(root / "journal")
    rows: list[tuple] = []
    fail_once = threading.Event()
    failed = threading.Event()

    def on_batch(batch_id, batch_rows):
        if fail_once.is_set():  # after the operator ran: its state version is written, the commit is not
            fail_once.clear()
            raise RuntimeError("sink lost")
        rows.extend((batch_id, r["kind"], r["node"], r["seq"], r["idx"], r["ts"], repr(r["data"]), r["error"],
                     r["input"], r["event"]) for r in batch_rows)

    def spec(ck, qid):
        return QuerySpec(query_id=qid, journal_dir=root / "journal", inputs=("src", "other"), stages=STAGES,
                         checkpoint_dir=ck, max_seqs=3, topology="t", on_batch=on_batch,
                         on_error=lambda e: failed.set())

    journal.append(parts[0])
    handle = start_query(spark, spec(root / "ck1", f"t.{layout}.1"))
    handle.process_all_available()
    handle.stop()
    shutil.copytree(root / "ck1", root / "ck2")
    journal.append(parts[1])
    handle = start_query(spark, spec(root / "ck2", f"t.{layout}.2"))  # no worker holds its pipeline
    handle.process_all_available()
    fail_once.set()
    journal.append(parts[2])
    assert failed.wait(120)
    handle.stop()
    handle = start_query(spark, spec(root / "ck2", f"t.{layout}.2"))
    handle.process_all_available()
    last = handle._query.lastProgress["batchId"]
    handle.stop()
    info = {"layout": read_layout(root / "ck2"),
            "snapshot": handoff.read_snapshot(spark, root / "ck2", last, STAGES, "t")}
    return rows, info


def test_logged_layout_matches_snapshot_layout_on_spark(spark, tmp_path, monkeypatch):
    rng = random.Random(7)
    parts = [_items(rng, 14), _items(rng, 10), _items(rng, 9)]
    want, ref = _run(spark, tmp_path, "snapshot", parts, monkeypatch)
    got, new = _run(spark, tmp_path, "logged", parts, monkeypatch)
    assert (ref["layout"], new["layout"]) == (SNAPSHOT, LOGGED)
    assert [r for r in want if r[1] == "out"]  # the stream produced rows
    assert got == want
    # the handed-over snapshots continue alike
    more = [(100 + i, n, 100_000 + i, f'{{"x":{i},"y":{i % 3}}}', False, None)
            for i, n in enumerate(["src", "other"] * 4)]
    continued = []
    for snap in (ref["snapshot"], new["snapshot"]):
        pipeline = Pipeline(STAGES, "t")
        pipeline.restore(snap)
        continued.append(pipeline.run(more))
    assert continued[0] == continued[1] and continued[0]


def _written(spark, tmp_path, layout: str, monkeypatch) -> list[int]:
    """``rocksdbTotalBytesWritten`` of 3-tuple batches after a 4000-tuple batch filled the window."""
    monkeypatch.setenv(LAYOUT_ENV, layout)
    root = tmp_path / layout
    journal = TestJournal(root / "journal")
    stage = StageSpec("s", "SELECT RSTREAM count(*) AS c, sum(x) AS s FROM src [RANGE 100000 TUPLES]",
                      ("src",))
    spec = QuerySpec(query_id=f"t.w.{layout}", journal_dir=root / "journal", inputs=("src",), stages=[stage],
                     checkpoint_dir=root / "ck", topology="t", on_batch=lambda bid, rs: None)
    journal.append([("src", {"x": i}) for i in range(4000)])
    handle = start_query(spark, spec)
    handle.process_all_available()
    out = []
    for i in range(3):
        journal.append([("src", {"x": i}) for i in range(3)])
        handle.process_all_available()
        metrics = handle._query.lastProgress["stateOperators"][0]["customMetrics"]
        out.append(metrics["rocksdbTotalBytesWritten"])
    handle.stop()
    return out


def test_logged_batches_write_in_proportion_to_the_batch(spark, tmp_path, monkeypatch):
    snapshot = _written(spark, tmp_path, "snapshot", monkeypatch)
    logged = _written(spark, tmp_path, "logged", monkeypatch)
    assert min(snapshot) > 40_000  # the whole 4000-tuple window, every batch
    assert max(logged) < 2_000  # three journal rows and the meta
