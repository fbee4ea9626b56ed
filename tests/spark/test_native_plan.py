"""The shape of the native tier's physical plan: what runs how often per line.

``sbpy_json_fields`` is the costly part of a native stage (a JSON scan and a string per key). Every
class and text the chain reads is an element of its result, so ``native_query.classify`` makes that
result a column of its own: the executed plan must call the function exactly once, whatever the chain
(written inline, Spark's common-subexpression elimination does not reach into the CASE branches that
build ``data`` and the filter pushed below the projection, so it ran two or three times per line).
The rows themselves are checked against the kernel in ``test_native_stage``.
"""
from __future__ import annotations

import pytest

from sbpy.bql.plan import Tier, plan_query
from sbpy.bql.spark.native_query import chain_of, classify, pack
from sbpy.bql.spark.native_udf import status
from sbpy.bql.spark.operator import OUTPUT_SCHEMA
from sbpy.bql.spark.compile import query_spec_stages

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")]

CHAINS = [
    [("out", "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8", ["src"])],
    [("s1", "SELECT RSTREAM id, price, 1 AS one FROM src [RANGE 1 TUPLES] WHERE price < 8 AND id >= 2", ["src"]),
     ("s2", 'SELECT RSTREAM id, one FROM s1 [RANGE 1 TUPLES] WHERE id != 5 OR id = 7', ["s1"])],
    [("s1", "SELECT RSTREAM a FROM src [RANGE 1 TUPLES]", ["src"])],
    [("s1", "SELECT RSTREAM id, price * 1.5 AS p, id * 2 AS d FROM src [RANGE 1 TUPLES] WHERE price * 2 + 1 < 17",
      ["src"]),
     ("s2", "SELECT RSTREAM p - 1 AS q, d FROM s1 [RANGE 1 TUPLES] WHERE p / 2 < d", ["s1"])],
]


def _executed_plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


@pytest.mark.parametrize("form", [classify, pack], ids=["classify", "pack"])
@pytest.mark.parametrize("texts", CHAINS, ids=["b1", "two-stages", "no-where", "arithmetic"])
def test_the_plan_calls_the_json_pass_once(spark, texts, form):
    plan = plan_query(["src"], texts)
    assert all(s.tier is Tier.NATIVE for s in plan.stages)
    chain = chain_of(query_spec_stages(plan))
    rows = [("line", None, i, 0, 0, '{"id": %d, "price": %d, "a": "x"}\n' % (i, i), None, "src", None)
            for i in range(1, 9)]
    df = form(spark.createDataFrame(rows, OUTPUT_SCHEMA), chain)
    got = df.collect()
    if form is classify:
        assert got and {r["kind"] for r in got} <= {"out", "skip"}  # decided natively
    else:
        assert got and all(r["k"] is None or r["k"] > 1 for r in got)  # outputs and skips only
    text = _executed_plan(df)
    assert text.count("sbpy_json_fields(") == 1, text
    # arithmetic (native_arith): each field's double and each output's text once per line, by name after
    arithmetic = texts is CHAINS[3]
    assert text.count("sbpy_key_double(") == (2 if arithmetic else 0), text
    assert text.count("sbpy_json_double(") == (2 if arithmetic else 0), text


def test_the_inline_columns_would_call_it_more_than_once(spark):
    """The check above can fail: the same chain's columns written over the function call itself."""
    from pyspark.sql import functions as F

    chain = chain_of(query_spec_stages(plan_query(["src"], CHAINS[0])))
    guard, depth, data, _pre = chain.columns(chain.fields(F.col("data")))
    rows = [("line", None, 1, 0, 0, '{"id": 1, "price": 1}\n', None, "src", None)]
    df = spark.createDataFrame(rows, OUTPUT_SCHEMA).select(guard.alias("g"), F.when(depth == 1, data).alias("d"))
    assert _executed_plan(df).count("sbpy_json_fields(") > 1


@pytest.mark.parametrize("form", [classify, pack], ids=["classify", "pack"])
def test_a_block_is_split_and_scanned_in_one_call(spark, tmp_path, form):
    """Descriptor rows (``fields`` mode): ``sbpy_file_fields`` runs once per block and decides the lines
    itself — a direct call of ``FileFields.fields`` (``StaticInvoke``: its arrays reach Catalyst without a
    UDF's conversion) —; ``sbpy_json_fields`` stays in the plan for lines that come as text, but no block
    line takes it."""
    from sbpy.bql.spark import journal_segments as js
    from sbpy.bql.spark.native_query import expand_lines
    from sbpy.bql.spark.native_source import descriptor_row, segment_lines

    chain = chain_of(query_spec_stages(plan_query(["src"], CHAINS[0])))
    raw = b"".join(b'{"id": %d, "price": %d, "a": "x"}\n' % (i, i) for i in range(1, 9))
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    (block,) = segment_lines(1, 7, js.make_segment(str(path), 0, raw, 1, 0, None), "src", 0, 8)
    text = ("line", None, 20, 0, 0, '{"id": 20, "price": 1}\n', None, "src", None)
    df = expand_lines(spark.createDataFrame([descriptor_row(block), text], OUTPUT_SCHEMA), chain.key_spec)
    got = form(df, chain).collect()
    if form is classify:
        assert sorted((r["seq"], r["kind"]) for r in got) == [(1, "out"), (2, "out"), (3, "out"), (4, "out"),
                                                              (5, "out"), (6, "out"), (7, "out"), (20, "out")]
    else:
        assert len(got) == 8 and all(r["k"] is None for r in got)
    plan = _executed_plan(form(df, chain))
    assert plan.count("static_invoke(sbpy.spark.FileFields.fields(") == 1, plan
    assert plan.count("sbpy_json_fields(") == 1, plan
