"""Subqueries in FROM and WITH CTEs against the old path: the same two SELECTs run one after the other
(the inner query over the input, the outer query over the inner query's output stream), as two
``CREATE STREAM`` statements would run them. Also: snapshot/restore in the middle of a run, a Timeplus
aggregation as the subquery (its last window is flushed when the input ends) and the plan's words."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.subquery import SubqueryProcessor
from sbpy.bql.runtime.testing import parse_select, run_query_detailed
from snapshot_util import assert_restore_midway_continues

INNER = [
    "SELECT RSTREAM k, v FROM s [RANGE 1 TUPLES] WHERE v > {c}",
    "SELECT ISTREAM k, v FROM s [RANGE {n} TUPLES]",
    "SELECT RSTREAM k, sum(v) AS v FROM s [RANGE {n} TUPLES] GROUP BY k",
    "SELECT DSTREAM DISTINCT k, v FROM s [RANGE {n} TUPLES]",
    "SELECT RSTREAM k, 12 / v AS v FROM s [RANGE 1 TUPLES]",
]
OUTER = [  # {src}: the FROM item; its window is {m} tuples
    "SELECT RSTREAM k, count(*) AS n FROM {src} GROUP BY k",
    "SELECT ISTREAM v FROM {src} ORDER BY v DESC LIMIT 2",
    "SELECT RSTREAM k, v FROM {src} WHERE k IN (0, 1) AND v BETWEEN 0 AND 20",
    "SELECT DSTREAM k FROM {src} WHERE v % 2 = 0",
]

rows_strategy = st.lists(st.fixed_dictionaries({"k": st.integers(0, 2), "v": st.integers(-2, 9)}),
                         min_size=1, max_size=15)


def _two_stages(inner: str, outer: str, m: int, rows: list[dict]):
    first = run_query_detailed(inner, {"s": rows})
    second = run_query_detailed(outer.format(src=f"t [RANGE {m} TUPLES]"), {"t": first.outputs})
    return second.outputs, [d.error for d in first.dropped + second.dropped]


def _drops(result) -> list[str]:
    return [d.error for d in result.dropped]


@settings(max_examples=120, deadline=None)
@given(rows_strategy, st.sampled_from(INNER), st.sampled_from(OUTER), st.integers(1, 4), st.integers(1, 4),
       st.integers(0, 5))
def test_cte_and_subquery_equal_the_two_stage_chain(rows, inner_t, outer, n, m, c):
    inner = inner_t.format(n=n, c=c)
    expected, expected_drops = _two_stages(inner, outer, m, rows)
    cte = run_query_detailed(f"WITH t AS ({inner}) " + outer.format(src=f"t [RANGE {m} TUPLES]"), {"s": rows})
    assert cte.outputs == expected
    assert sorted(_drops(cte)) == sorted(expected_drops)
    sub = run_query_detailed(outer.format(src=f"({inner}) [RANGE {m} TUPLES] AS t"), {"s": rows})
    assert sub.outputs == expected and sorted(_drops(sub)) == sorted(expected_drops)


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.data())
def test_snapshot_restore_in_the_middle(rows, data):
    query = ("WITH a AS (SELECT ISTREAM k, v FROM s [RANGE 3 TUPLES]) "
             "SELECT RSTREAM k, count(*) AS n FROM a [RANGE 4 TUPLES] GROUP BY k ORDER BY n DESC, k LIMIT 2")
    assert_restore_midway_continues(query, [("s", r) for r in rows], data.draw(st.integers(0, len(rows))))


def test_timeplus_subquery_is_flushed_when_the_input_ends():
    rows = [{"t": t, "v": v} for t, v in [(0.5, 1), (1.2, 2), (1.7, 3), (2.1, 4), (3.9, 5)]]
    inner = "SELECT window_start, count(*) AS n FROM tumble(s, t, 1 SECONDS) GROUP BY window_start"
    outer = "SELECT RSTREAM n FROM {t} [RANGE 1 TUPLES] WHERE n > 0"
    first = run_query_detailed(inner, {"s": rows}, timestamp_field="t")
    expected = run_query_detailed(outer.format(t="w"), {"w": first.outputs}).outputs
    got = run_query_detailed(f"WITH w AS ({inner}) {outer.format(t='w')}", {"s": rows}, timestamp_field="t")
    assert got.outputs == expected and len(expected) == 4


def test_processor_reads_the_inner_inputs_and_plans_as_a_subquery():
    proc = build_processor(parse_select(
        "SELECT RSTREAM a:x AS x FROM (SELECT RSTREAM x FROM s1 [RANGE 1 TUPLES]) [RANGE 2 TUPLES] AS a, "
        "s2 [RANGE 1 TUPLES] AS b"))
    assert isinstance(proc, SubqueryProcessor) and proc.inputs == ("s1", "s2")
    from sbpy.bql.plan.planner import _kernel, _memoryless

    assert _kernel(proc) == "subquery" and _memoryless(proc)[0] is False
