"""Row pattern semantics: quantifier preference (greedy / reluctant incl. ``??``), alternation,
PERMUTE order, exclusion, anchors and the compiled program."""
from match_util import run

from sbpy.bql.ast import PatternQuantified, PatternVar
from sbpy.bql.runtime.match.program import CONSUME, MATCH, SPLIT, compile_pattern

V = [{"id": i, "v": v} for i, v in enumerate([1, 1, 1, 2, 1], start=1)]
ALL = "ORDER BY id MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS m ALL ROWS PER MATCH "


def labels(out):
    return [(r["id"], r["c"], r["m"]) for r in out]


def test_greedy_plus_takes_all_then_gives_back():
    out = run(ALL + "PATTERN (A+ B) DEFINE A AS v = 1", V)
    assert labels(out) == [(1, "A", 1), (2, "A", 1), (3, "A", 1), (4, "B", 1), (5, "A", 2)][:4]


def test_greedy_gives_rows_back_to_the_rest_of_the_pattern():
    out = run(ALL + "PATTERN (A+ B B) DEFINE A AS v = 1", V[:3])
    assert labels(out) == [(1, "A", 1), (2, "B", 1), (3, "B", 1)]


def test_reluctant_plus_takes_the_minimum():
    out = run(ALL + "PATTERN (A+? B) DEFINE A AS v = 1", V[:3])
    assert labels(out) == [(1, "A", 1), (2, "B", 1)]


def test_reluctant_question_prefers_zero():
    out = run(ALL + "PATTERN (A?? B) DEFINE A AS v = 1, B AS v = 1", V[:2])
    assert labels(out) == [(1, "B", 1), (2, "B", 2)]


def test_greedy_question_prefers_one():
    out = run(ALL + "PATTERN (A? B) DEFINE A AS v = 1, B AS v = 1", V[:2])
    assert labels(out) == [(1, "A", 1), (2, "B", 1)]


def test_bounded_range_greedy_and_reluctant():
    rows = [{"id": i, "v": 1} for i in range(1, 5)]
    assert labels(run(ALL + "PATTERN (A{2,3}) DEFINE A AS true", rows)) == [(1, "A", 1), (2, "A", 1), (3, "A", 1)]
    assert labels(run(ALL + "PATTERN (A{2,3}?) DEFINE A AS true", rows)) == [(1, "A", 1), (2, "A", 1), (3, "A", 2), (4, "A", 2)]


def test_alternation_prefers_leftmost_branch():
    out = run(ALL + "PATTERN ((X | Y)+) DEFINE X AS v = 1, Y AS v >= 1", V)
    assert [r["c"] for r in out] == ["X", "X", "X", "Y", "X"]


def test_alternation_backtracks_to_a_later_branch():
    out = run(ALL + "PATTERN ((X | Y) Z) DEFINE X AS v = 1, Y AS v = 1, Z AS PREV(CLASSIFIER()) = \"Y\"",
              V[:2])
    assert [r["c"] for r in out] == ["Y", "Z"]


def test_permute_lexicographic_first_then_other_orders():
    rows = [{"id": 1, "v": 2}, {"id": 2, "v": 1}, {"id": 3, "v": 1}, {"id": 4, "v": 2}]
    out = run(ALL + "PATTERN (PERMUTE(A, B)) DEFINE A AS v = 1, B AS v = 2", rows)
    assert labels(out) == [(1, "B", 1), (2, "A", 1), (3, "A", 2), (4, "B", 2)]


def test_exclusion_hides_rows_but_keeps_them_in_the_match():
    out = run("ORDER BY id MEASURES CLASSIFIER() AS c, FINAL count(*) AS n ALL ROWS PER MATCH "
              "PATTERN (A {- B -} C) DEFINE A AS true", V[:3])
    assert [(r["id"], r["c"], r["n"]) for r in out] == [(1, "A", 3), (3, "C", 3)]


def test_start_anchor_only_matches_the_first_row():
    out = run(ALL + "PATTERN (^ A) DEFINE A AS true", V)
    assert labels(out) == [(1, "A", 1)]


def test_end_anchor_waits_for_the_end_of_the_partition():
    from match_util import feed, mr

    steps = feed(mr(ALL + "PATTERN (A $) DEFINE A AS true", reorder_bound=0), V[:3], per_step=True)
    assert steps[:3] == [[], [], []]
    assert labels(steps[3]) == [(3, "A", 1)]


def test_empty_iteration_is_not_repeated():
    out = run(ALL + "PATTERN ((A?)* B) DEFINE A AS v = 9, B AS v = 1", V[:1])
    assert labels(out) == [(1, "B", 1)]


def test_nested_plus_is_linear_not_exponential():
    rows = [{"id": i, "v": 1} for i in range(300)]
    assert run(ALL + "PATTERN ((A+)+ B) DEFINE A AS v = 1, B AS v = 2", rows) == []


def test_program_unrolls_bounded_quantifiers():
    code = compile_pattern(PatternQuantified(PatternVar("A"), 1, 2))
    assert code[0] == (CONSUME, "A", False)
    assert code[1] == (SPLIT, 2, 3)
    assert code[2] == (CONSUME, "A", False)
    assert code[-1] == (MATCH,)
