"""The keyed MATCH_RECOGNIZE split (router → per-key matcher → tail), run in-process without Spark:
for every conformance case with PARTITION BY and for chains with stages before and after the match,
random micro-batch splits, bucket counts, bucket and key orders, dropped worker caches and failed
attempts (``keyed_model.run_segments``) give exactly the rows of the sequential operator
(same ``out`` rows in the same order per batch, same dropped steps, same summed counters, same ends)."""
from __future__ import annotations

import random
from collections import Counter

import pytest
import yaml

from conformance_compare import CASES as CASES_DIR
from sbpy.bql.runtime.testing import arrival_order, json_ready
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.keyed_model import run_segments
from sbpy.bql.spark.keyed_ops import ROW_COLUMNS
from sbpy.bql.spark.keyed_plan import plan_keyed, route_key
from sbpy.bql.spark.operator import Pipeline, StageSpec

CASES = CASES_DIR / "match_recognize/cases.yaml"


def journal(inputs, interleave=None, ends=True):
    """Journal rows ``(seq, input, ts_us, data_text, end)`` in arrival order, then an end per input."""
    rows, cursor = [], Counter()
    for seq, name in enumerate(arrival_order(inputs, interleave), start=1):
        data = json_ready(inputs[name][cursor[name]])
        cursor[name] += 1
        rows.append((seq, name, seq * 1000, jf.encode_data(data), False))
    if ends:
        for name in inputs:
            rows.append((len(rows) + 1, name, 0, None, True))
    return rows


def split(rows, rng):
    cuts = sorted(rng.sample(range(1, len(rows)), min(len(rows) - 1, rng.randint(0, 4)))) if len(rows) > 1 else []
    out, prev = [], 0
    for c in cuts + [len(rows)]:
        out.append(rows[prev:c])
        prev = c
    return out


def sequential(stages, batches):
    """The reference: one ``Pipeline``, snapshotted and restored between batches."""
    out, snap = [], None
    for batch in batches:
        p = Pipeline(stages)
        if snap is not None:
            p.restore(snap)
        rows = p.run(batch)
        snap = p.snapshot()
        out.append(sorted(rows, key=lambda r: (r[2], r[3])))
    return out


def summary(rows, columns):
    rows = [dict(zip(columns, r)) for r in rows]
    outs = [(r["node"], r["seq"], r["ts"], jf.decode_data(r["data"])) for r in rows if r["kind"] == "out"]
    dropped = Counter((r["node"], r["data"], r["error"], r["input"], r["event"]) for r in rows if r["kind"] == "dropped")
    stats: dict = {}
    for r in rows:
        if r["kind"] == "stat":
            d = jf.decode_data(r["data"])
            s = stats.setdefault(r["node"], {"received": Counter(), "sent": 0, "dropped": 0})
            s["received"].update(d["received"])
            s["sent"] += d["sent"]
            s["dropped"] += d["dropped"]
    stats = {k: v for k, v in stats.items() if v["sent"] or v["dropped"] or +v["received"]}
    ends = sorted(r["node"] for r in rows if r["kind"] == "end")
    assert not [r for r in rows if r["kind"] in ("tuple", "eof")]
    return outs, dropped, stats, ends


SEQ_COLUMNS = ["kind", "node", "seq", "idx", "ts", "data", "error", "input", "event"]


def check_same(stages, inputs_names, rows, seed, min_outs=0):
    plan = plan_keyed(stages, inputs_names)
    assert plan is not None
    rng = random.Random(seed)
    total = 0
    for _ in range(4):
        batches = split(rows, rng)
        want = sequential(stages, batches)
        got = run_segments(plan, batches, buckets=rng.randint(1, 4), chaos=rng)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert summary(g, ROW_COLUMNS) == summary(w, SEQ_COLUMNS)
            total += len(summary(g, ROW_COLUMNS)[0])
    assert total >= min_outs


def _partitioned_cases():
    if not CASES.exists():
        return []
    cases = yaml.safe_load(CASES.read_text()) or []
    return [pytest.param(c, id=c["name"]) for c in cases
            if "inputs" in c and "PARTITION BY" in c["query"] and len(c["inputs"]) == 1]


@pytest.mark.skipif(not CASES.exists(), reason="shared conformance cases are absent")
@pytest.mark.parametrize("case", _partitioned_cases())
def test_conformance_case_keyed_equals_sequential(case):
    (name,) = case["inputs"]
    stages = [StageSpec("m", case["query"], (name,))]
    check_same(stages, (name,), journal(case["inputs"]), seed=hash(case["name"]) & 0xFFFF)


def test_partitioned_cases_exist():
    if CASES.exists():
        assert len(_partitioned_cases()) >= 20


MR = ("SELECT RSTREAM * FROM {src} MATCH_RECOGNIZE (PARTITION BY sym ORDER BY t "
      "MEASURES FIRST(A.t) AS t0, LAST(C.t) AS t1, count(B.p) AS nb ONE ROW PER MATCH "
      "PATTERN (A B+ C) DEFINE B AS B.p < PREV(B.p), C AS C.p > PREV(C.p))")


def ticker(n, syms, seed, extra=None):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        sym = rng.choice(syms)
        rows.append({"sym": sym, "t": i, "p": rng.randint(1, 9), **(extra(i, rng) if extra else {})})
    return rows


def test_stages_before_and_after_the_match():
    stages = [StageSpec("f", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES] WHERE p != 5", ("src",)),
              StageSpec("m", MR.format(src="f"), ("f",)),
              StageSpec("g", "SELECT RSTREAM sym, t0, t1, nb * 10 AS nb10 FROM m [RANGE 1 TUPLES]", ("m",))]
    rows = journal({"src": ticker(300, ["a", "b", "c", 1, 1.0, 2], 1)})
    plan = plan_keyed(stages, ("src",))
    assert [s.node for s in plan.upstream] == ["f"] and plan.keyed.node == "m"
    assert [s.node for s in plan.downstream] == ["g"] and plan.up_inputs == ("src",)
    check_same(stages, ("src",), rows, seed=7, min_outs=40)


def test_downstream_join_with_another_input():
    stages = [StageSpec("m", MR.format(src="src"), ("src",)),
              StageSpec("j", "SELECT RSTREAM m:sym AS sym, m:t1 AS t1, other:v AS v FROM m [RANGE 1 TUPLES], "
                             "other [RANGE 1 TUPLES]", ("m", "other"))]
    inputs = {"src": ticker(200, ["x", "y"], 2), "other": [{"v": i} for i in range(60)]}
    order = ["src"] * 100 + ["other"] * 30 + ["src"] * 100 + ["other"] * 30
    check_same(stages, ("src", "other"), journal(inputs, order), seed=3, min_outs=10)


def test_bad_keys_late_rows_nan_and_equal_numbers():
    q = ("SELECT RSTREAM * FROM src MATCH_RECOGNIZE (PARTITION BY k + 0 ORDER BY t "
         "MEASURES A.t AS ta, B.t AS tb ONE ROW PER MATCH PATTERN (A B) DEFINE B AS B.v > A.v)")
    rows = [{"k": 1, "t": 0, "v": 1}, {"k": 1.0, "t": 1, "v": 2}, {"k": "x", "t": 2, "v": 3},
            {"k": float("nan"), "t": 3, "v": 1}, {"k": float("nan"), "t": 4, "v": 2},
            {"k": 2, "t": 30, "v": 1}, {"k": 2, "t": 5, "v": 9},  # 25 late: dropped
            {"k": 2, "t": 29, "v": 5}, {"k": 2, "t": 31, "v": 0}, {"k": None, "t": 32, "v": 1},
            {"k": None, "t": 33, "v": 2}]
    stages = [StageSpec("m", q, ("src",))]
    want = sequential(stages, [journal({"src": rows})])[0]
    kinds = Counter(r[0] for r in want)
    assert kinds["out"] >= 3 and kinds["dropped"] >= 2
    check_same(stages, ("src",), journal({"src": rows}), seed=11)


def test_route_key_uses_bql_equality():
    assert route_key((2,)) == route_key((2.0,)) != route_key(("2",))
    assert route_key((True,)) != route_key((1,))
    assert route_key(({"a": [1, 2.5]},)) == route_key(({"a": [1.0, 2.5]},))
    assert route_key((float("nan"),), "1") != route_key((float("nan"),), "2")
    assert route_key((None,)) == route_key((None,))


def test_plan_only_for_partitioned_match():
    plain = StageSpec("s", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES]", ("src",))
    unpartitioned = StageSpec("m", "SELECT RSTREAM * FROM src MATCH_RECOGNIZE (ORDER BY t MEASURES A.t AS x "
                                   "PATTERN (A) DEFINE A AS true)", ("src",))
    assert plan_keyed([plain], ("src",)) is None
    assert plan_keyed([unpartitioned], ("src",)) is None
    # a journal input read on both sides of the match: not separable, stays sequential
    both = [StageSpec("m", MR.format(src="src"), ("src",)),
            StageSpec("j", "SELECT RSTREAM * FROM m [RANGE 1 TUPLES], src [RANGE 1 TUPLES]", ("m", "src"))]
    assert plan_keyed(both, ("src",)) is None
