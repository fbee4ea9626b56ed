"""Output modes and AFTER MATCH SKIP: ONE ROW vs ALL ROWS, SHOW / OMIT EMPTY MATCHES, WITH UNMATCHED
ROWS, every skip mode and the run-time skip errors, the outer SELECT list and WHERE."""
import datetime as dt

from match_util import T0, feed, mr, run

from sbpy.bql.runtime.processor import Tuple

ROWS = [{"id": i, "v": v} for i, v in enumerate([90, 80, 70, 80, 70, 80], start=1)]
BODY = ("ORDER BY id MEASURES MATCH_NUMBER() AS m, CLASSIFIER() AS c ALL ROWS PER MATCH {skip} "
        "PATTERN (A B+ C+) DEFINE B AS v < PREV(v), C AS v > PREV(v)")


def triples(out):
    return [(o["id"], o["m"], o["c"]) for o in out]


def test_one_row_has_partition_columns_then_measures():
    rows = [{"g": "x", "id": 1, "v": 1}, {"g": "x", "id": 2, "v": 2}]
    out = run("PARTITION BY g ORDER BY id MEASURES count(*) AS n ONE ROW PER MATCH PATTERN (A B) "
              "DEFINE A AS true", rows)
    assert out == [{"g": "x", "n": 2}]
    assert list(out[0]) == ["g", "n"]


def test_all_rows_is_input_row_plus_measures():
    out = run("ORDER BY id MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A) DEFINE A AS true",
              ROWS[:1])
    assert out == [{"id": 1, "v": 90, "c": "A"}]


def test_skip_past_last_row():
    out = run(BODY.format(skip="AFTER MATCH SKIP PAST LAST ROW"), ROWS)
    assert triples(out) == [(1, 1, "A"), (2, 1, "B"), (3, 1, "B"), (4, 1, "C")]


def test_skip_to_next_row_gives_overlapping_matches():
    out = run(BODY.format(skip="AFTER MATCH SKIP TO NEXT ROW"), ROWS)
    assert [o["id"] for o in out if o["c"] == "A"] == [1, 2, 4]


def test_skip_to_first_and_last():
    first = run(BODY.format(skip="AFTER MATCH SKIP TO FIRST C"), ROWS)
    assert [o["id"] for o in first if o["c"] == "A"] == [1, 4]
    last = run(BODY.format(skip="AFTER MATCH SKIP TO LAST B"), ROWS)
    assert [o["id"] for o in last if o["c"] == "A"] == [1, 4]


def test_skip_to_absent_variable_is_dropped_with_reason():
    p = mr("ORDER BY id MEASURES count(*) AS n ONE ROW PER MATCH AFTER MATCH SKIP TO LAST B "
           "PATTERN (A B?) DEFINE A AS true, B AS false", reorder_bound=0)
    res = p.process(Tuple({"id": 1}, T0, 1, "t"))
    res2 = p.process(Tuple({"id": 2}, T0, 2, "t"))
    dropped = res.dropped + res2.dropped
    assert dropped and "no row of the match is mapped to B" in dropped[0].error


def test_skip_to_first_row_would_loop():
    p = mr("ORDER BY id MEASURES count(*) AS n ONE ROW PER MATCH AFTER MATCH SKIP TO FIRST B "
           "PATTERN (A* B) DEFINE A AS id > 5", reorder_bound=0)
    res = p.process(Tuple({"id": 1}, T0, 1, "t"))
    assert res.outputs == [] and "infinite loop" in res.dropped[0].error


def test_empty_matches_show_omit_and_unmatched():
    rows = [{"id": 1, "v": 1}, {"id": 2, "v": 2}, {"id": 3, "v": 1}]
    base = "ORDER BY id MEASURES MATCH_NUMBER() AS m, count(*) AS n ALL ROWS PER MATCH {mode} " \
           "PATTERN (B*) DEFINE B AS v = 2"
    show = run(base.format(mode="SHOW EMPTY MATCHES"), rows)
    assert [(o["id"], o["m"], o["n"]) for o in show] == [(1, 1, 0), (2, 2, 1), (3, 3, 0)]
    omit = run(base.format(mode="OMIT EMPTY MATCHES"), rows)
    assert [(o["id"], o["m"], o["n"]) for o in omit] == [(2, 2, 1)]
    unm = run("ORDER BY id MEASURES MATCH_NUMBER() AS m ALL ROWS PER MATCH WITH UNMATCHED ROWS "
              "PATTERN (B+) DEFINE B AS v = 2", rows)
    assert [(o["id"], o["m"]) for o in unm] == [(1, None), (2, 1), (3, None)]


def test_one_row_per_match_reports_empty_matches():
    out = run("ORDER BY id MEASURES MATCH_NUMBER() AS m, count(*) AS n ONE ROW PER MATCH "
              "PATTERN (B*) DEFINE B AS v = 2", [{"id": 1, "v": 1}])
    assert out == [{"m": 1, "n": 0}]


def test_outer_select_projection_and_where():
    p = mr("ORDER BY id MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true",
           select="id * 10 AS x, c")
    q = mr("ORDER BY id MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A+) DEFINE A AS true",
           select="id", tail="WHERE id > 1")
    assert feed(q, ROWS[:3]) == [{"id": 2}, {"id": 3}]
    assert feed(p, ROWS[:2]) == [{"x": 10, "c": "A"}, {"x": 20, "c": "A"}]


def test_output_timestamp_is_last_row_of_match():
    p = mr("ORDER BY id MEASURES count(*) AS n ALL ROWS PER MATCH PATTERN (A B) DEFINE A AS true",
           reorder_bound=0)
    p.process(Tuple({"id": 1}, T0, 1, "t"))
    res = p.process(Tuple({"id": 2}, T0 + dt.timedelta(seconds=5), 2, "t"))
    assert [t.ts for t in res.outputs] == [T0 + dt.timedelta(seconds=5)] * 2
