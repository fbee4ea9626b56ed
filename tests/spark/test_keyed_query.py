"""MATCH_RECOGNIZE keyed by PARTITION BY on Spark: router → groupBy(key) matcher → tail, with state
per partition in the state store, a stop/restart between two rows of an open match, end of input
reaching partitions that have no rows in the last batch, and counters summed over partitions."""
from __future__ import annotations

import pytest

from sbpy.bql.runtime.testing import run_query
from sbpy.bql.spark.keyed_plan import plan_keyed
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.operator import Pipeline, StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.testing import TestJournal

pytestmark = pytest.mark.spark

# the YDB/YQL buttons example (seed 002): PARTITION BY device_id, zone_id
BUTTONS = ("SELECT RSTREAM * FROM input_stream MATCH_RECOGNIZE (PARTITION BY device_id, zone_id ORDER BY ts "
           "MEASURES LAST(B1.ts) AS b1, LAST(B3.ts) AS b3 ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW "
           "PATTERN (B1 B2+ B3) DEFINE B1 AS B1.button = 1, B2 AS B2.button = 2, B3 AS B3.button = 3)")
ROWS = [
    {"ts": 1700000000, "button": 1, "device_id": 1, "zone_id": 24},
    {"ts": 1700000020, "button": 1, "device_id": 2, "zone_id": 12},
    {"ts": 1700000040, "button": 2, "device_id": 1, "zone_id": 24},
    {"ts": 1700000060, "button": 2, "device_id": 1, "zone_id": 24},  # restart after this row: open match
    {"ts": 1700000080, "button": 3, "device_id": 2, "zone_id": 12},  # no B2 in this partition
    {"ts": 1700000100, "button": 3, "device_id": 1, "zone_id": 24},
    {"ts": 1700000120, "button": 1, "device_id": 1, "zone_id": 25},
    {"ts": 1700000140, "button": 2, "device_id": 1.0, "zone_id": 25},  # 1.0 = 1: same partition
    {"ts": 1700000160, "button": 3, "device_id": 1, "zone_id": 25},
]


class Collector:
    def __init__(self):
        self.rows: list[dict] = []

    def __call__(self, batch_id, rows):
        self.rows.extend(rows)

    def kind(self, kind):
        return [r for r in self.rows if r["kind"] == kind]


def _start(spark, tmp_path, got, stages, inputs):
    spec = QuerySpec(query_id="t.keyed", journal_dir=tmp_path / "journal", inputs=inputs, stages=stages,
                     checkpoint_dir=tmp_path / "ck", on_batch=got, topology="t")
    return start_query(spark, spec)


def test_buttons_keyed_with_restart_inside_an_open_match(spark, tmp_path):
    stages = [StageSpec("m", BUTTONS, ("input_stream",))]
    assert plan_keyed(stages, ("input_stream",)) is not None
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    journal.append([("input_stream", r) for r in ROWS[:4]])
    handle = _start(spark, tmp_path, got, stages, ("input_stream",))
    handle.process_all_available()
    assert got.kind("out") == []
    handle.stop()
    # restart from the checkpoint between two rows of the open (1, 24) match
    journal.append([("input_stream", r) for r in ROWS[4:8]])
    handle = _start(spark, tmp_path, got, stages, ("input_stream",))
    handle.process_all_available()
    journal.append([("input_stream", ROWS[8]), ("input_stream", None)])
    handle.process_all_available()
    assert handle.error is None
    handle.stop()
    want = run_query(BUTTONS, {"input_stream": ROWS})
    assert want == [{"device_id": 1, "zone_id": 24, "b1": ROWS[0]["ts"], "b3": ROWS[5]["ts"]},
                    {"device_id": 1, "zone_id": 25, "b1": ROWS[6]["ts"], "b3": ROWS[8]["ts"]}]
    assert [r["data"] for r in got.kind("out")] == want
    # emitted with the same row (seq) as by the sequential operator (here: the rows are released from
    # each partition's reorder buffer by a later row of the same partition or by the end)
    reference = Pipeline(stages).run(jf.read_entries(tmp_path / "journal", ["input_stream"], 0, 10))
    assert [r["seq"] for r in got.kind("out")] == [r[2] for r in reference if r[0] == "out"]
    assert [r["node"] for r in got.kind("end")] == ["m"]
    received = sum(r["data"]["received"].get("input_stream", 0) for r in got.kind("stat") if r["node"] == "m")
    sent = sum(r["data"]["sent"] for r in got.kind("stat") if r["node"] == "m")
    assert (received, sent) == (9, 2)
    assert len({r["data"]["received"].get("input_stream") for r in got.kind("stat")}) >= 2  # several groups
    ck = tmp_path / "ck" / "keyed-v4"
    assert (ck / "commits").is_dir()
    assert sorted(p.name for p in (ck / "state").iterdir()) == ["0"]  # the per-key operator (stateless routing)


def test_chain_before_and_after_and_end_to_idle_partitions(spark, tmp_path):
    mr = ("SELECT RSTREAM * FROM f MATCH_RECOGNIZE (PARTITION BY sym ORDER BY t "
          "MEASURES FIRST(A.t) AS t0, LAST(C.t) AS t1 ONE ROW PER MATCH "
          "PATTERN (A B+ C*) DEFINE B AS B.p < PREV(B.p), C AS C.p > PREV(C.p))")
    stages = [StageSpec("f", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES] WHERE p > 0", ("src",)),
              StageSpec("m", mr, ("f",)),
              StageSpec("g", "SELECT RSTREAM sym, t0, t1 FROM m [RANGE 1 TUPLES]", ("m",))]
    rows = [{"sym": s, "t": i, "p": p} for i, (s, p) in
            enumerate([("a", 5), ("b", 5), ("a", 4), ("b", 3), ("a", 6), ("c", 9), ("c", 8), ("b", 2)])]
    journal = TestJournal(tmp_path / "journal")
    got = Collector()
    journal.append([("src", r) for r in rows])
    handle = _start(spark, tmp_path, got, stages, ("src",))
    handle.process_all_available()
    # the end arrives alone: partitions a, b, c have no rows in this batch but must finish
    journal.append([("src", None)])
    handle.process_all_available()
    assert handle.error is None
    handle.stop()
    plan = plan_keyed(stages, ("src",))
    assert plan is not None and plan.downstream
    want = run_query("SELECT RSTREAM sym, t0, t1 FROM m [RANGE 1 TUPLES]",
                     {"m": run_query(mr.replace("FROM f", "FROM src"), {"src": rows})})
    assert [r["data"] for r in got.kind("out")] == want
    assert len(want) == 3
    assert [r["seq"] for r in got.kind("out")].count(9) >= 2  # b and c are only decided by the end (seq 9)
    assert sorted(r["node"] for r in got.kind("end")) == ["f", "g", "m"]
    state = tmp_path / "ck" / "keyed-v4" / "state"
    assert sorted(p.name for p in state.iterdir()) == ["0", "1", "2"]  # router, per-key matcher, tail
