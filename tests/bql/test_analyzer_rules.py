"""Rule-by-rule tests of the analyzer, including nodes the parser never builds (hand-made AST)."""
from __future__ import annotations

import pytest

from sbpy.bql.analyzer import RULES, analyze, check_builtin_params, is_reserved, prepare, rewrite_pattern_refs
from sbpy.bql.analyzer.match_pattern import first_always, max_rows, nullable
from sbpy.bql.ast import (
    AliasPath,
    FieldRef,
    IndexStep,
    KeyStep,
    Literal,
    PatternConcat,
    PatternFieldRef,
    PatternQuantified,
    PatternVar,
    Projection,
    RangeWindow,
    Select,
    SliceStep,
    StreamRef,
)
from sbpy.bql.errors import BQLAnalysisError, Span
from sbpy.bql.parser import parse_one


def run(text: str):
    return analyze(prepare(parse_one(text)), text)


def error(text: str) -> str:
    with pytest.raises(BQLAnalysisError) as info:
        run(text)
    return info.value.message


def field(*keys: str) -> FieldRef:
    return FieldRef(tuple(KeyStep(k) for k in keys))


def select(items=(), window=RangeWindow(1, "tuples"), **kw) -> Select:
    projections = tuple(items) or (Projection(field("a")),)
    return Select("rstream", projections, (StreamRef("src", window),), **kw)


def test_rules_are_an_ordered_tuple_of_functions():
    assert isinstance(RULES, tuple) and all(callable(r) for r in RULES)


# ---------------------------------------------------------------- windows


@pytest.mark.parametrize("value,unit", [(1, "tuples"), (1048575, "tuples"), (0.001, "seconds"),
                                        (86400, "seconds"), (86400000, "milliseconds")])
def test_range_limits_accepted(value, unit):
    analyze(select(window=RangeWindow(value, unit)))


@pytest.mark.parametrize("value,unit,needle", [
    (0, "tuples", "positive"), (-1, "seconds", "positive"), (1.5, "tuples", "integer"),
    (1048576, "tuples", "too large"), (86400.5, "seconds", "too large"), (86400001, "milliseconds", "too large"),
])
def test_range_limits_rejected(value, unit, needle):
    with pytest.raises(BQLAnalysisError, match=needle):
        analyze(select(window=RangeWindow(value, unit)))


def test_buffer_size_zero_means_default_and_max_is_131071():
    analyze(select(window=RangeWindow(1, "tuples", buffer_size=0)))
    analyze(select(window=RangeWindow(1, "tuples", buffer_size=131071)))
    with pytest.raises(BQLAnalysisError, match="buffer size is too large"):
        analyze(select(window=RangeWindow(1, "tuples", buffer_size=131072)))


def test_error_span_is_the_window():
    span = Span(26, 42, 1, 27)
    with pytest.raises(BQLAnalysisError) as info:
        analyze(select(window=RangeWindow(0, "tuples", span=span)))
    assert info.value.span == span


def test_select_without_from():
    with pytest.raises(BQLAnalysisError, match="at least one relation"):
        analyze(Select("rstream", (Projection(Literal(2)),), ()))


# ---------------------------------------------------------------- names, labels


def test_reserved_words_are_case_insensitive():
    assert is_reserved("TABLE") and is_reserved("Input") and not is_reserved("src")
    assert error("CREATE SINK Left TYPE stdout") == "'left' is a reserved word and cannot be used as a sink name"
    assert "as a state name" in error("LOAD STATE Value TYPE t")


def test_reading_a_reserved_name_is_fine():
    run("INSERT INTO snk FROM src")
    run("SELECT RSTREAM count FROM src [RANGE 1 TUPLES]")


@pytest.mark.parametrize("steps,needle", [
    ((KeyStep("x"), SliceStep(1, 2)), "slices"),
    ((KeyStep("x"), IndexStep(-1)), "negative index"),
    ((IndexStep(0),), "start with a key"),
])
def test_bad_output_labels(steps, needle):
    with pytest.raises(BQLAnalysisError, match=needle):
        analyze(select([Projection(field("a"), AliasPath(steps))]))


def test_good_output_label():
    analyze(select([Projection(field("a"), AliasPath((KeyStep("x"), IndexStep(3), KeyStep("z"))))]))


# ---------------------------------------------------------------- aggregates and prefixes


def test_grouped_column_must_match_the_whole_path():
    # SensorBee compares rowValue{relation, column-as-written} (bql/execution/transform_plan.go)
    run("SELECT RSTREAM a.b, count(*) FROM src [RANGE 2 TUPLES] GROUP BY a.b")
    assert "field 'a.b'" in error("SELECT RSTREAM a.b, count(*) FROM src [RANGE 2 TUPLES] GROUP BY a")
    assert "field 'a'" in error("SELECT RSTREAM a, count(*) FROM src [RANGE 2 TUPLES] GROUP BY a.b")


def test_union_branches_are_checked_each():
    run("SELECT RSTREAM a FROM s1 [RANGE 1 TUPLES] UNION ALL SELECT RSTREAM count(*) FROM s2 [RANGE 1 TUPLES]")
    assert "grouped" in error(
        "SELECT RSTREAM a FROM s1 [RANGE 1 TUPLES] UNION ALL SELECT RSTREAM b, count(*) FROM s2 [RANGE 1 TUPLES]")


def test_unknown_functions_are_not_errors():
    run("SELECT RSTREAM my_udf(a, b, c) FROM src [RANGE 1 TUPLES]")
    run("SELECT RSTREAM * FROM my_udsf(\"src\", 1) [RANGE 1 TUPLES]")


def test_value_errors_never_reject_a_select():
    run("SELECT RSTREAM 1 / 0 AS x, \"a\" || 2 AS y FROM src [RANGE 1 TUPLES] WHERE 6")


# ---------------------------------------------------------------- MATCH_RECOGNIZE

MR = "SELECT RSTREAM * FROM src MATCH_RECOGNIZE ( ORDER BY ts MEASURES {m} PATTERN ({p}) DEFINE {d} )"


def test_prepare_rewrites_variable_references_case_insensitively():
    stmt = prepare(parse_one(MR.format(m="a.price AS p, data.x AS q", p="A B+", d="B AS b.price > 1")))
    mr = stmt.from_items[0]
    assert mr.measures[0].expr == PatternFieldRef("A", (KeyStep("price"),))
    assert mr.measures[1].expr == field("data", "x")
    assert isinstance(mr.defines[0].condition.left, PatternFieldRef)


def test_rewrite_leaves_plain_selects_alone():
    s = parse_one("SELECT RSTREAM a.b FROM src [RANGE 1 TUPLES]")
    assert rewrite_pattern_refs(s) is s


def test_subset_variables_are_rewritten():
    text = ("SELECT RSTREAM * FROM src MATCH_RECOGNIZE ( ORDER BY ts MEASURES LAST(U.price) AS p "
            "PATTERN (A B) SUBSET U = (A, B) DEFINE A AS true )")
    nav = prepare(parse_one(text)).from_items[0].measures[0].expr
    assert nav.operand == PatternFieldRef("U", (KeyStep("price"),))
    run(text)


def test_unbounded_always_true_quantifier_is_a_warning():
    warnings = run(MR.format(m="count(*) AS n", p="A B*", d="A AS price > 1"))
    assert len(warnings) == 1 and "'B'" in warnings[0].message
    assert run(MR.format(m="count(*) AS n", p="A B*?", d="A AS price > 1")) == []
    assert run(MR.format(m="count(*) AS n", p="A B{,3}", d="A AS price > 1")) == []


def test_within_removes_the_warning():
    text = ("SELECT RSTREAM * FROM src MATCH_RECOGNIZE ( ORDER BY ts MEASURES count(*) AS n "
            "PATTERN (A B*) WITHIN 10 SECONDS DEFINE A AS price > 1 )")
    assert run(text) == []


def test_quantifier_min_above_max_hand_built():
    from sbpy.bql.analyzer.match import _check_quantifiers

    class FakeMR:
        pattern = PatternConcat((PatternVar("A"), PatternQuantified(PatternVar("B"), 5, 1)))

    with pytest.raises(BQLAnalysisError, match="minimum is larger"):
        _check_quantifiers(FakeMR)


def test_skip_to_first_of_optional_first_variable_is_fine():
    run(MR.format(m="count(*) AS n", p="A? B+", d="B AS price > 1").replace(
        "PATTERN", "AFTER MATCH SKIP TO FIRST A PATTERN"))
    run(MR.format(m="count(*) AS n", p="A+ B", d="A AS price > 1").replace(
        "PATTERN", "AFTER MATCH SKIP TO LAST A PATTERN"))


def test_pattern_facts():
    a, b = PatternVar("A"), PatternVar("B")
    seq = PatternConcat((PatternQuantified(a, 0, 1), b))
    assert first_always(seq) == set()
    assert first_always(PatternConcat((a, b))) == {"A"}
    assert nullable(PatternQuantified(a, 0, None)) and not nullable(seq)
    assert max_rows(PatternConcat((a, PatternQuantified(b, 1, None))), "B") == float("inf")
    assert max_rows(PatternConcat((a, b)), "A") == 1


# ---------------------------------------------------------------- built-in parameters


@pytest.mark.parametrize("text,needle", [
    ("CREATE SOURCE s TYPE file", "needs the parameter 'path'"),
    ("CREATE SOURCE s TYPE file WITH path = \"x\", repeat = 1.5", "'repeat'"),
    ("CREATE SOURCE s TYPE file WITH path = \"x\", rewindable = 1", "'rewindable'"),
    ("CREATE SOURCE s TYPE file WITH path = 1", "'path'"),
    ("CREATE SOURCE s TYPE file WITH path = \"x\", interval = \"fast\"", "'interval'"),
    ("CREATE SINK s TYPE file", "needs the parameter 'path'"),
    ("CREATE SINK s TYPE uds", "needs the parameter 'name'"),
])
def test_builtin_params_rejected(text, needle):
    with pytest.raises(BQLAnalysisError, match=needle):
        check_builtin_params(parse_one(text))


@pytest.mark.parametrize("text", [
    "CREATE SOURCE s TYPE dropped_tuples",
    "CREATE SOURCE s TYPE file WITH path = \"x\", interval = \"100ms\", repeat = -1, rewindable = true",
    "CREATE SOURCE s TYPE file WITH path = \"x\", interval = 0.5, unknown_param = [1]",
    "CREATE SOURCE s TYPE fluentd WITH bind = \"0.0.0.0:12345\"",
    "CREATE SINK s TYPE stdout WITH anything = 1",
    "CREATE SINK s TYPE uds WITH name = \"my_state\"",
    "CREATE SINK s TYPE file WITH path = \"out.jsonl\", truncate = true, max_size = 10",
])
def test_builtin_params_accepted(text):
    check_builtin_params(parse_one(text))


def test_node_names_and_tags_follow_sensorbee_symbol_rules():
    assert error("CREATE SOURCE " + "a" * 128 + " TYPE t") == (
        "a source name can be at most 127 characters long, not 128")
    run("CREATE SOURCE " + "a" * 127 + " TYPE t")
    assert error("SAVE STATE s TAG select") == "'select' is a reserved word and cannot be used as a tag"
    assert error("LOAD STATE s TYPE t TAG " + "t" * 128) == "a tag can be at most 127 characters long, not 128"
    run("SAVE STATE s TAG Default")
    run("LOAD STATE s TYPE t TAG v1")
