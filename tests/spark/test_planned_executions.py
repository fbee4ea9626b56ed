"""Every execution the planner allows gives the sequential kernel's rows, tuple for tuple.

For each chain the reference is ``operator.Pipeline`` fed the journal in seq order in-process (the
sequential kernel); each allowed execution (forced) runs the same journal on Spark through
``compile.start_planned``, and its ``out`` rows (data, order), dropped tuples and stage ends must equal
the reference's.
"""
from __future__ import annotations

import dataclasses

import pytest

from sbpy.bql.plan import Execution, plan_query
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.batch_rows import TupleBatch
from sbpy.bql.spark.compile import query_spec_stages, start_planned
from sbpy.bql.spark.operator import Pipeline
from sbpy.bql.spark.query import QuerySpec
from sbpy.bql.spark.testing import TestJournal

pytestmark = pytest.mark.spark

ROWS = [{"id": 1, "price": 3}, {"id": 2, "price": 9.5}, {"id": 3}, {"id": 4, "price": "x"},
        {"id": 5, "price": 7.0}, {"id": 6, "price": None}, {"id": 7, "price": 2, "note": [1, {"a": "b"}]},
        {"id": 8, "price": 8}, {"id": 9, "price": -1.5}, {"id": 10, "price": 1}]

CHAINS = {
    "filter-project": [
        ("s1", "SELECT RSTREAM id, price, note FROM src [RANGE 1 TUPLES] WHERE price < 8", ["src"]),
        ("s2", "SELECT RSTREAM id * 2 AS d, price::string AS p, note FROM s1 [RANGE 1 TUPLES]", ["s1"]),
    ],
    "errors-drop-alone": [
        ("s1", "SELECT RSTREAM id, price + 1 AS p FROM src [RANGE 1 TUPLES]", ["src"]),
    ],
    "istream-window": [
        ("s1", "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8", ["src"]),
        ("s2", "SELECT ISTREAM count(*) AS n, max(id) AS m FROM s1 [RANGE 3 TUPLES]", ["s1"]),
    ],
}


def _reference(chain, journal_rows):
    pipeline = Pipeline(query_spec_stages(plan_query(["src"], chain)), "t")
    return pipeline.run(journal_rows)


def _summary(rows):
    """Comparable (kind, node, data, error) of out/dropped/end rows in order (stats are summed apart)."""
    out = []
    for r in rows:
        kind = r[0] if isinstance(r, tuple) else r["kind"]
        if kind == "stat":
            continue
        if isinstance(r, tuple):
            data = jf.decode_data(r[5]) if r[5] is not None else None
            out.append((kind, r[1], r[2], data, r[6]))
        else:
            out.append((kind, r["node"], r["seq"], r["data"], r["error"]))
    return out


def _run_to_end(spark, plan, tmp_path, query_id, on_batch, **options):
    """Start ``plan`` over ``tmp_path``'s journal (checkpoint ``tmp_path/ck``), process everything
    available, stop: the query must not have failed."""
    spec = QuerySpec(query_id=query_id, journal_dir=tmp_path / "journal", inputs=("src",),
                     stages=query_spec_stages(plan), checkpoint_dir=tmp_path / "ck", topology="t",
                     on_batch=on_batch, plan=plan, **options)
    handle = start_planned(spark, spec)
    try:
        handle.process_all_available()
        assert handle.error is None
    finally:
        handle.stop()


def _executions(chain):
    plan = plan_query(["src"], chain)
    allowed = {plan.execution}
    for ex in Execution:
        if plan_query(["src"], chain, force=ex).execution is ex:
            allowed.add(ex)
    return sorted(allowed, key=lambda e: e.value)


CASES = [(name, ex) for name, chain in CHAINS.items() for ex in _executions(chain)]


@pytest.mark.parametrize("name, execution", CASES, ids=[f"{n}-{e.value}" for n, e in CASES])
def test_execution_equals_sequential_kernel(spark, tmp_path, name, execution):
    chain = CHAINS[name]
    journal = TestJournal(tmp_path / "journal")
    seqs = journal.append([("src", r) for r in ROWS[:6]])
    seqs += journal.append([("src", r) for r in ROWS[6:]] + [("src", None)])
    journal_rows = jf.read_entries(tmp_path / "journal", ["src"], 0, seqs[-1])
    expected = _summary(_reference(chain, journal_rows))
    plan = plan_query(["src"], chain, force=execution)
    assert plan.execution is execution
    got = []
    _run_to_end(spark, plan, tmp_path, f"t.{name}", lambda batch_id, rows: got.extend(rows), max_seqs=4)
    assert _summary(got) == expected
    assert any(k == "out" for k, *_ in expected) and any(k == "end" for k, *_ in expected)
    received = sum(n for r in got if r["kind"] == "stat" for n in r["data"]["received"].values())
    assert received == sum(n for r in _reference(chain, journal_rows) if r[0] == "stat"
                           for n in jf.decode_data(r[5])["received"].values())


def test_stateless_plan_is_read_in_several_partitions(spark, tmp_path):
    """The stateless execution really spreads a large batch over partitions (one task per piece)."""
    plan = plan_query(["src"], CHAINS["filter-project"])
    assert plan.execution is Execution.STATELESS
    journal = TestJournal(tmp_path / "journal")
    journal.append([("src", {"id": i, "price": i % 10, "note": i}) for i in range(30_000)])
    got = []
    spec = QuerySpec(query_id="t.parts", journal_dir=tmp_path / "journal", inputs=("src",),
                     stages=query_spec_stages(plan), checkpoint_dir=tmp_path / "ck", topology="t",
                     on_batch=lambda batch_id, rows: got.extend(rows), plan=plan)
    handle = start_planned(spark, dataclasses.replace(spec))
    try:
        handle.process_all_available()
    finally:
        handle.stop()
    outs = [r for r in got if r["kind"] == "out"]
    assert [r["data"]["d"] for r in outs] == [i * 2 for i in range(30_000) if i % 10 < 8]
    stat_rows = [r for r in got if r["kind"] == "stat" and r["node"] == "s1"]
    assert len(stat_rows) >= 2, "expected one stat row per partition"


@pytest.mark.parametrize("tier", ["native", "vectorized"])
@pytest.mark.parametrize("out_rows", ["tuples", "texts"])
def test_stateless_plan_hands_out_rows_as_pairs(spark, tmp_path, monkeypatch, out_rows, tier):
    """``out_rows`` of a stateless plan on either tier (``stateless_query.collector``, ``NativeCollector``):
    each batch a ``TupleBatch`` whose ``out`` rows are the sequential pipeline's ``(ts, data)`` in order —
    decoded maps, or its tagged JSON text as it is —, every other row as the dict rows give it."""
    from sbpy.bql.plan import Tier
    from sbpy.bql.spark.native_udf import ENV, registered

    if tier == "vectorized":
        monkeypatch.setenv(ENV, "0")
    chain = CHAINS["filter-project"]
    plan = plan_query(["src"], chain)
    assert plan.execution is Execution.STATELESS
    assert {s.tier for s in plan.stages} == {Tier.NATIVE if tier == "native" else Tier.VECTORIZED}
    assert tier == "vectorized" or registered(spark)
    journal = TestJournal(tmp_path / "journal")
    seqs = journal.append([("src", r) for r in ROWS[:6]])
    seqs += journal.append([("src", r) for r in ROWS[6:]] + [("src", None)])
    reference = _reference(chain, jf.read_entries(tmp_path / "journal", ["src"], 0, seqs[-1]))
    batches = []
    _run_to_end(spark, plan, tmp_path, f"t.pairs.{out_rows}", lambda batch_id, rows: batches.append(rows),
                max_seqs=4, out_rows=out_rows)
    encoded = out_rows == "texts"
    assert batches and all(isinstance(b, TupleBatch) and b.encoded is encoded for b in batches)
    outs = [pair for b in batches for pair in b.outs]
    want = [(r[4], r[5] if encoded else jf.decode_data(r[5])) for r in reference if r[0] == "out"]
    assert outs == want and want
    others = [row for b in batches for row in b.others]
    assert _summary(others) == [row for row in _summary(reference) if row[0] != "out"]
    assert any(row["kind"] == "end" for row in others)


def test_stateless_checkpoint_resumes_on_the_other_tier(spark, tmp_path, monkeypatch):
    """A stateless query's checkpoint holds offsets only, so a restart that plans the other tier (the
    planner now keeps tuple journals off the native tier; ``SBPY_NATIVE`` may change) resumes where the
    first run stopped: every output once, in order."""
    from sbpy.bql.plan import Tier
    from sbpy.bql.spark.native_udf import ENV, registered

    if not registered(spark):
        pytest.skip("the session has no native function: there is no other tier to switch from")
    chain = CHAINS["filter-project"]
    journal = TestJournal(tmp_path / "journal")
    journal.append([("src", {"id": i, "price": i % 10, "note": i}) for i in range(40)])
    got = []

    def run(tier):
        monkeypatch.setenv(ENV, "1" if tier is Tier.NATIVE else "0")
        plan = plan_query(["src"], chain)
        assert {s.tier for s in plan.stages} == {tier}
        _run_to_end(spark, plan, tmp_path, "t.switch",
                    lambda batch_id, rows: got.extend(r for r in rows if r["kind"] == "out"), max_seqs=16)

    run(Tier.NATIVE)
    assert [r["data"]["d"] for r in got] == [i * 2 for i in range(40) if i % 10 < 8]
    journal.append([("src", {"id": i, "price": i % 10, "note": i}) for i in range(40, 80)])
    run(Tier.VECTORIZED)
    assert [r["data"]["d"] for r in got] == [i * 2 for i in range(80) if i % 10 < 8]
