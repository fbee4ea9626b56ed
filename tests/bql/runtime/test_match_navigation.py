"""MEASURES and DEFINE expressions: PREV/NEXT (physical, may leave the match), FIRST/LAST (logical),
RUNNING/FINAL, CLASSIFIER, MATCH_NUMBER, SUBSET and aggregates over variables."""
import pytest
from match_util import run

from sbpy.bql.ast import FunctionCall, Literal, Navigation, PatternFieldRef, KeyStep
from sbpy.bql.functions import builtin_registry
from sbpy.bql.runtime.match.levels import define_level, max_offsets

ROWS = [{"id": i, "v": v} for i, v in enumerate([10, 20, 30, 40, 50], start=1)]


def one(measures, pattern="A B+", define="DEFINE A AS v = 20", rows=ROWS):
    out = run(f"ORDER BY id MEASURES {measures} ONE ROW PER MATCH PATTERN ({pattern}) {define}", rows)
    assert len(out) == 1
    return out[0]


def test_prev_and_next_leave_the_match_but_not_the_partition():
    r = one("PREV(A.v) AS p1, PREV(A.v, 2) AS p2, NEXT(A.v) AS n1, NEXT(A.v, 9) AS n9")
    assert r == {"p1": 10, "p2": None, "n1": 30, "n9": None}


def test_first_last_with_logical_offsets():
    r = one("FIRST(B.v) AS f0, FIRST(B.v, 1) AS f1, LAST(B.v) AS l0, LAST(B.v, 1) AS l1, LAST(B.v, 5) AS l5")
    assert r == {"f0": 30, "f1": 40, "l0": 50, "l1": 40, "l5": None}


def test_prev_of_last_nests_physical_after_logical():
    r = one("PREV(LAST(B.v), 3) AS x, NEXT(FIRST(v), 1) AS y")
    assert r == {"x": 20, "y": 30}


def test_running_and_final_in_all_rows():
    out = run("ORDER BY id MEASURES RUNNING LAST(v) AS r, FINAL LAST(v) AS f, count(*) AS n "
              "ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS v > 20", ROWS)
    assert [(o["id"], o["r"], o["f"], o["n"]) for o in out] == [(3, 30, 50, 1), (4, 40, 50, 2), (5, 50, 50, 3)]


def test_one_row_per_match_is_final():
    assert one("LAST(v) AS l, count(B.v) AS nb, sum(v) AS s") == {"l": 50, "nb": 3, "s": 140}


def test_classifier_and_subset():
    out = run("ORDER BY id MEASURES CLASSIFIER() AS c, CLASSIFIER(U) AS u ALL ROWS PER MATCH "
              "PATTERN (A B C) SUBSET U = (A, B) DEFINE A AS v = 10", ROWS[:3])
    assert [(o["c"], o["u"]) for o in out] == [("A", "A"), ("B", "B"), ("C", "B")]


def test_variables_are_case_insensitive():
    r = one("last(b.v) AS lb, classifier() AS c", pattern="a b+", define="DEFINE a AS v = 20")
    assert r == {"lb": 50, "c": "B"}


def test_match_number_counts_matches_per_partition():
    rows = [{"g": g, "id": i} for i, g in enumerate(["x", "y", "x", "y", "x"])]
    out = run("PARTITION BY g ORDER BY id MEASURES MATCH_NUMBER() AS m ONE ROW PER MATCH "
              "PATTERN (A) DEFINE A AS true", rows)
    assert sorted((o["g"], o["m"]) for o in out) == [("x", 1), ("x", 2), ("x", 3), ("y", 1), ("y", 2)]


def test_define_sees_current_row_tentatively_mapped():
    # sum(A.v) includes the row being tested for A
    out = run("ORDER BY id MEASURES count(*) AS n, sum(A.v) AS s ONE ROW PER MATCH "
              "PATTERN (A+ B) DEFINE A AS sum(A.v) < 60", ROWS)
    assert out == [{"n": 3, "s": 30}, {"n": 2, "s": 40}]


def test_undefined_variable_is_true_and_null_condition_is_false():
    rows = [{"id": 1, "v": None}, {"id": 2, "v": 5}]
    out = run("ORDER BY id MEASURES A.id AS a, B.id AS b ONE ROW PER MATCH PATTERN (A B) DEFINE A AS v > 0",
              rows + [{"id": 3, "v": 1}])
    assert out == [{"a": 2, "b": 3}]


def test_aggregates_over_variable_subset_and_all_rows():
    r = one("array_agg(B.v) AS bs, array_agg(U.v) AS us, count(*) AS n, avg(B.v) AS av",
            define="SUBSET U = (A) DEFINE A AS v = 20")
    assert r == {"bs": [30, 40, 50], "us": [20], "n": 4, "av": 40.0}


def test_define_levels_and_offsets():
    reg = builtin_registry()
    ref = PatternFieldRef(var=None, path=(KeyStep("v"),))
    other = PatternFieldRef(var="B", path=(KeyStep("v"),))
    assert define_level(ref, "A", reg) == 1
    assert define_level(Navigation("prev", ref, 2), "A", reg) == 1
    assert define_level(Navigation("first", ref, 0), "A", reg) == 2
    assert define_level(FunctionCall("sum", (ref,)), "A", reg) == 2
    assert define_level(other, "A", reg) == 3
    assert max_offsets([Navigation("prev", Navigation("prev", ref, 2), 3), Literal(1)]) == (5, 0)


@pytest.mark.parametrize("expr, want", [("NEXT(CLASSIFIER())", None), ("PREV(CLASSIFIER())", None)])
def test_classifier_outside_running_match_is_null(expr, want):
    out = run(f"ORDER BY id MEASURES {expr} AS x ONE ROW PER MATCH PATTERN (A) DEFINE A AS v = 30", ROWS)
    assert out == [{"x": want}]
