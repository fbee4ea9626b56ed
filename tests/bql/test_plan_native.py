"""The planner's native-tier verdict: which memoryless chains compile to Spark expressions, and why not."""
from __future__ import annotations

import pytest

from sbpy.bql.plan import Tier, Where, plan_query
from sbpy.bql.plan.explain import render
from sbpy.bql.spark.native_udf import status

pytestmark = pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")

FILTER = "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8"


def _tiers(*stages, inputs=("src",)):
    plan = plan_query(list(inputs), [(n, t, list(i)) for n, t, i in stages])
    return plan, [s.tier for s in plan.stages]


def test_filter_and_projection_chain_is_native():
    plan, tiers = _tiers(("s1", FILTER, ["src"]),
                         ("s2", 'SELECT RSTREAM price, "x" AS tag FROM s1 [RANGE 1 TUPLES] WHERE id >= 3 OR NOT price = 1', ["s1"]))
    assert tiers == [Tier.NATIVE, Tier.NATIVE]
    assert all(s.where is Where.JVM and "compiles to Spark expressions" in s.tier_why for s in plan.stages)
    text = render(plan)
    assert "stage s1 [native-jvm]" in text and "  runs on: JVM" in text


@pytest.mark.parametrize("text, why", [
    ("SELECT RSTREAM id, price * sin(id) AS p FROM src [RANGE 1 TUPLES]", "the function sin in a number expression"),
    ("SELECT RSTREAM id, abs(name::string) AS p FROM src [RANGE 1 TUPLES]", "a cast to string in a number expression"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE price + 1 = \"x\"", "arithmetic with a string"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE 1 = 1", "a comparison of two literals"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE 2 BETWEEN 1 AND 3", "a comparison of two literals"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE exp(price) < 8", "the function exp (only fields, literals"),
    ("SELECT RSTREAM id::bool AS s FROM src [RANGE 1 TUPLES]", "a cast to bool"),
    ("SELECT RSTREAM (id + 1)::string AS s FROM src [RANGE 1 TUPLES]", "in a string expression"),
    ("SELECT RSTREAM a[-1] AS c FROM src [RANGE 1 TUPLES]", "a path step other than a key or an index"),
    ("SELECT RSTREAM a[1:2] AS c FROM src [RANGE 1 TUPLES]", "a path step other than a key or an index"),
    ("SELECT RSTREAM a..b AS c FROM src [RANGE 1 TUPLES]", "a path step other than a key or an index"),
    ('SELECT RSTREAM a["x\u0002y"] AS c FROM src [RANGE 1 TUPLES]', "or a key holding U+0001 or U+0002"),
    ('SELECT RSTREAM *, 1 AS ["x\u0001y"] FROM src [RANGE 1 TUPLES]', "or a key holding U+0001 or U+0002"),
    ("SELECT RSTREAM a AS *, id FROM src [RANGE 1 TUPLES]", "not RSTREAM over [RANGE 1 TUPLES] with a plain select list"),
    ("SELECT RSTREAM *, id AS x.y FROM src [RANGE 1 TUPLES]", "not RSTREAM over [RANGE 1 TUPLES] with a plain select list"),
    ('SELECT RSTREAM id AS ["$x"] FROM src [RANGE 1 TUPLES]', "an output key starting with '$'"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE flag LIKE \"x%\"", "in WHERE"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE flag BETWEEN false AND true", "BETWEEN bools"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE id + 1 = true", "a bool literal with other than a field"),
])
def test_chains_outside_the_subset_stay_vectorized_with_the_reason(text, why):
    plan, tiers = _tiers(("s1", text, ["src"]))
    assert tiers == [Tier.VECTORIZED] and plan.stages[0].where is Where.EXECUTOR
    assert plan.stages[0].tier_why.startswith("native tier not used: stage 's1': ") and why in plan.stages[0].tier_why


def test_star_is_native():
    _plan, tiers = _tiers(("s1", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES] WHERE price < 8", ["src"]),
                          ("s2", "SELECT RSTREAM s1:*, price * 2 AS p FROM s1 [RANGE 1 TUPLES]", ["s1"]),
                          ("s3", "SELECT RSTREAM *, p + 1 AS q FROM s2 [RANGE 1 TUPLES]", ["s2"]))
    assert tiers == [Tier.NATIVE] * 3


def test_arithmetic_is_native():
    _plan, tiers = _tiers(("s1", "SELECT RSTREAM id * 2 AS d, -price AS n FROM src [RANGE 1 TUPLES] WHERE price % 3 < id / 2",
                          ["src"]),
                         ("s2", "SELECT RSTREAM d + 1 AS e FROM s1 [RANGE 1 TUPLES] WHERE d - n > 0", ["s1"]))
    assert tiers == [Tier.NATIVE, Tier.NATIVE]


def test_number_functions_and_casts_are_native():
    first = ("SELECT RSTREAM abs(id) AS a, sign(price - 3) AS s, round(price) AS r, sqrt(price) AS q, "
             "price::int AS i, id::float AS f FROM src [RANGE 1 TUPLES] WHERE ceil(price) + floor(price) > trunc(id * 1.5)")
    _plan, tiers = _tiers(("s1", first, ["src"]),
                         ("s2", "SELECT RSTREAM abs(a - i) AS d FROM s1 [RANGE 1 TUPLES] WHERE q::int > 1", ["s1"]))
    assert tiers == [Tier.NATIVE, Tier.NATIVE]


def test_a_function_a_plugin_replaced_is_not_native():
    """``abs`` registered over by a topology's function is that function, which only Python runs."""
    from sbpy.bql.functions import builtin_registry
    from sbpy.bql.functions.registry import FunctionSpec
    from sbpy.bql.runtime import ProcessorContext

    functions = builtin_registry(copy=True)
    functions.register("abs", FunctionSpec("abs", lambda x: 42, 1, 1), replace=True)
    text = "SELECT RSTREAM abs(id) AS a FROM src [RANGE 1 TUPLES]"
    plan = plan_query(["src"], [("s1", text, ["src"])], ProcessorContext(functions=functions))
    assert plan.stages[0].tier is Tier.VECTORIZED
    assert "the function abs (the topology's own, not the built-in)" in plan.stages[0].tier_why
    assert _tiers(("s1", text, ["src"]))[1] == [Tier.NATIVE]


def test_paths_of_keys_and_indexes_are_native():
    plan, tiers = _tiers(("s1", 'SELECT RSTREAM a.b AS x, a["c"][0] AS y, m FROM src [RANGE 1 TUPLES] WHERE a.b > 3',
                          ["src"]),
                         ("s2", "SELECT RSTREAM x, m.k[2].v AS v FROM s1 [RANGE 1 TUPLES]", ["s1"]))
    assert tiers == [Tier.NATIVE, Tier.NATIVE]
    from sbpy.bql.spark.native_query import chain_of
    from sbpy.bql.spark.compile import query_spec_stages

    spec = chain_of(query_spec_stages(plan)).key_spec  # s2's path continues the line's m
    assert spec == "#a\u0002.b\u0001=a\u0002.c\u0002[0\u0001=m\u0001=m\u0002.k\u0002[2\u0002.v"


def test_string_expressions_are_native():
    _plan, tiers = _tiers(("s1", 'SELECT RSTREAM name || "-" || unit AS l, lower(name) AS n FROM src [RANGE 1 TUPLES] '
                                 'WHERE upper(unit) = "EUR" AND name || "x" > unit', ["src"]),
                         ("s2", 'SELECT RSTREAM upper(l) AS u FROM s1 [RANGE 1 TUPLES] WHERE n != "a"', ["s1"]))
    assert tiers == [Tier.NATIVE, Tier.NATIVE]


@pytest.mark.parametrize("text, why", [
    ('SELECT RSTREAM lower("a\\b" || name) AS l FROM src [RANGE 1 TUPLES]', "a case map of a literal the JSON"),
    ("SELECT RSTREAM name || 1 AS l FROM src [RANGE 1 TUPLES]", "a int literal in a string expression"),
    ("SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE lower(name) = 3", "a string expression with other than"),
    ("SELECT RSTREAM lower(name) + 1 AS l FROM src [RANGE 1 TUPLES]", "the function lower in a number expression"),
])
def test_string_expressions_outside_the_subset(text, why):
    plan, tiers = _tiers(("s1", text, ["src"]))
    assert tiers == [Tier.VECTORIZED] and why in plan.stages[0].tier_why


def test_one_stage_outside_keeps_the_whole_chain_vectorized():
    plan, tiers = _tiers(("s1", FILTER, ["src"]), ("s2", "SELECT RSTREAM sin(id) AS d FROM s1 [RANGE 1 TUPLES]", ["s1"]))
    assert tiers == [Tier.VECTORIZED, Tier.VECTORIZED] and "stage 's2'" in plan.stages[0].tier_why


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("SBPY_NATIVE", "0")
    plan, tiers = _tiers(("s1", FILTER, ["src"]))
    assert tiers == [Tier.VECTORIZED] and plan.stages[0].tier_why.endswith("SBPY_NATIVE=0")


def test_stateful_chains_do_not_ask():
    plan, tiers = _tiers(("s1", "SELECT ISTREAM id FROM src [RANGE 2 TUPLES]", ["src"]))
    assert tiers == [Tier.DRIVER] and plan.stages[0].tier_why == ""
    assert plan.stages[0].implementation.startswith("incremental")


def test_the_zero_key_is_the_number_key_of_both_zeros():
    from sbpy.bql.spark.native_arith import ZERO_KEY
    from sbpy.bql.spark.native_keys import number_key

    assert ZERO_KEY == number_key(0.0) == number_key(-0.0) != number_key(5e-324)
