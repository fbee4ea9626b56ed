"""``LEFT JOIN`` against an independent computation: each step, SQL's LEFT JOIN of the two windows
recomputed from scratch with Python conditions (no BQL evaluator, no kernel bookkeeping), filtered by
the WHERE clause, through an emitter written here. Also: RIGHT JOIN is the swapped LEFT JOIN, a LEFT
JOIN whose every left entry matches has the inner join's rows, snapshot/restore in the middle, and
golden rows for NULL padding, errors, grouping and the plan (docs/sql-breadth.md, "LEFT JOIN").
"""
from __future__ import annotations

import datetime as _dt
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.parser import parse_one
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.left_join import LeftJoinProcessor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select, run_query_detailed
from snapshot_util import assert_restore_midway_continues

rows = st.lists(st.fixed_dictionaries({"k": st.one_of(st.none(), st.integers(0, 2)), "v": st.integers(0, 4)}),
                max_size=8)
order = st.lists(st.sampled_from(["l", "r"]), max_size=16)

# (BQL ON, Python ON over the two tuples' data)
ONS = [
    ("l:k = r:k", lambda l, r: l["k"] is not None and r["k"] is not None and l["k"] == r["k"]),
    ("l:k = r:k AND l:v <= r:v", lambda l, r: l["k"] is not None and l["k"] == r["k"] and l["v"] <= r["v"]),
    ("l:v + 1 = r:v OR l:k = r:k", lambda l, r: l["v"] + 1 == r["v"] or (l["k"] is not None and l["k"] == r["k"])),
]
# (BQL WHERE, Python WHERE over the left data and the right data or None when padded)
WHERES = [
    ("", lambda l, r: True),
    ("r:v IS NULL OR r:v > 1", lambda l, r: r is None or r["v"] > 1),
    ("l:v % 2 = 0", lambda l, r: l["v"] % 2 == 0),
    ("r:k IS NOT NULL", lambda l, r: r is not None and r["k"] is not None),
]
WINDOWS = [("[RANGE 1 TUPLES]", ("tuples", 1)), ("[RANGE 2 TUPLES]", ("tuples", 2)),
           ("[RANGE 3 TUPLES]", ("tuples", 3)), ("[RANGE 2 MILLISECONDS]", ("ms", 2))]


def _arrivals(inputs: dict, steps: list[str]) -> list[str]:
    """The harness's arrival order (``testing.arrival_order``), restated."""
    used: Counter = Counter()
    out = []
    for name in steps:
        if used[name] < len(inputs[name]):
            out.append(name)
            used[name] += 1
    for name, data in inputs.items():
        out += [name] * (len(data) - used[name])
    return out


def _key(row: dict) -> tuple:
    return tuple(sorted(row.items()))


def _expected(inputs, steps, emitter, wl, wr, on, where):
    """Outputs of ``SELECT <emitter> l:v AS lv, r:v AS rv FROM l wl LEFT JOIN r wr ON on WHERE where``."""
    windows = {"l": [], "r": []}  # (ts in ms, data)
    spec = {"l": wl, "r": wr}
    cursor: Counter = Counter()
    previous: list[dict] = []
    out = []
    for ts, name in enumerate(_arrivals(inputs, steps), start=1):
        data = inputs[name][cursor[name]]
        cursor[name] += 1
        windows[name].append((ts, data))
        for side, (unit, size) in spec.items():
            if unit == "tuples":
                windows[side] = windows[side][-size:]
            else:
                windows[side] = [(t, d) for t, d in windows[side] if t >= ts - size]
        relation = []
        for _, left in windows["l"]:
            matches = [right for _, right in windows["r"] if on(left, right)]
            for right in matches or [None]:
                if where(left, right):
                    relation.append({"lv": left["v"], "rv": None if right is None else right["v"]})
        if emitter == "RSTREAM":
            out += relation
        elif emitter == "ISTREAM":
            before, seen = Counter(_key(r) for r in previous), Counter()
            for r in relation:
                seen[_key(r)] += 1
                if seen[_key(r)] > before[_key(r)]:
                    out.append(r)
        else:
            now, seen = Counter(_key(r) for r in relation), Counter()
            for r in previous:
                seen[_key(r)] += 1
                if seen[_key(r)] > now[_key(r)]:
                    out.append(r)
        previous = relation
    return out


@settings(max_examples=200, deadline=None)
@given(rows, rows, order, st.sampled_from(["RSTREAM", "ISTREAM", "DSTREAM"]), st.sampled_from(WINDOWS),
       st.sampled_from(WINDOWS), st.sampled_from(ONS), st.sampled_from(WHERES))
def test_left_join_is_sql_left_join_of_the_windows_every_step(left, right, steps, emitter, wl, wr, on, where):
    tail = f" WHERE {where[0]}" if where[0] else ""
    query = f"SELECT {emitter} l:v AS lv, r:v AS rv FROM l {wl[0]} LEFT OUTER JOIN r {wr[0]} ON {on[0]}{tail}"
    inputs = {"l": left, "r": right}
    result = run_query_detailed(query, inputs, steps)
    assert not result.dropped
    assert result.outputs == _expected(inputs, steps, emitter, wl[1], wr[1], on[1], where[1])


@settings(max_examples=100, deadline=None)
@given(rows, rows, order, st.sampled_from(["RSTREAM", "ISTREAM", "DSTREAM"]), st.sampled_from(WHERES))
def test_right_join_is_the_swapped_left_join(left, right, steps, emitter, where):
    tail = f" WHERE {where[0]}" if where[0] else ""
    right_join = f"SELECT {emitter} l:v AS lv, r:v AS rv FROM r [RANGE 2 TUPLES] RIGHT JOIN l [RANGE 3 TUPLES] USING (k){tail}"
    left_join = f"SELECT {emitter} l:v AS lv, r:v AS rv FROM l [RANGE 3 TUPLES] LEFT JOIN r [RANGE 2 TUPLES] ON r:k = l:k{tail}"
    assert parse_one(right_join) == parse_one(left_join)
    inputs = {"l": left, "r": right}
    assert run_query_detailed(right_join, inputs, steps).outputs == run_query_detailed(left_join, inputs, steps).outputs


def _bags(query: str, inputs: dict, steps: list[str]) -> list[Counter]:
    """Each step's RSTREAM relation as a multiset."""
    proc = build_processor(parse_select(query))
    t0 = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC)
    cursor: Counter = Counter()
    out = []
    for seq, name in enumerate(_arrivals(inputs, steps), start=1):
        data = inputs[name][cursor[name]]
        cursor[name] += 1
        result = proc.process(Tuple(dict(data), t0 + _dt.timedelta(milliseconds=seq), seq, name))
        out.append(Counter(_key(json_ready(t.data)) for t in result.outputs))
    return out


@settings(max_examples=100, deadline=None)
@given(rows, rows, order)
def test_left_join_is_the_inner_join_plus_the_padded_rows(left, right, steps):
    inputs = {"l": left, "r": right}
    items = "l:v AS lv, r:v AS rv, r:k AS rk"
    outer = _bags(f"SELECT RSTREAM {items} FROM l [RANGE 3 TUPLES] LEFT JOIN r [RANGE 2 TUPLES] ON l:k = r:k", inputs, steps)
    inner = _bags(f"SELECT RSTREAM {items} FROM l [RANGE 3 TUPLES] JOIN r [RANGE 2 TUPLES] ON l:k = r:k", inputs, steps)
    padded = _bags(f"SELECT RSTREAM {items} FROM l [RANGE 3 TUPLES] LEFT JOIN r [RANGE 2 TUPLES] ON l:k = r:k "
                   "WHERE r:k IS NULL", inputs, steps)
    assert outer == [i + p for i, p in zip(inner, padded)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["l", "r"]),
                          st.fixed_dictionaries({"k": st.integers(0, 2), "v": st.integers(0, 4)})), max_size=14),
       st.data())
def test_snapshot_restore_in_the_middle(stream, data):
    query = ("SELECT ISTREAM l:v AS lv, count(r:v) AS n FROM l [RANGE 3 TUPLES] LEFT JOIN r [RANGE 2 TUPLES] "
             "ON l:k = r:k WHERE r:v IS NULL OR r:v > 0 GROUP BY l:v")
    assert_restore_midway_continues(query, stream, data.draw(st.integers(0, len(stream))))


def test_the_padded_side_reads_null():
    query = ("SELECT RSTREAM l:v AS lv, r:v AS rv, r:v IS NULL AS is_null, r:v IS MISSING AS is_missing, "
             "r:ts() AS rts, r:* AS rmap, r:x.y[0] AS deep FROM l [RANGE 1 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] ON l:k = r:k")
    result = run_query_detailed(query, {"l": [{"k": 1, "v": 7}], "r": []})
    assert result.outputs == [{"lv": 7, "rv": None, "is_null": True, "is_missing": False, "rts": None,
                               "rmap": {}, "deep": None}]
    star = run_query_detailed("SELECT RSTREAM * FROM l [RANGE 1 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] ON l:k = r:k",
                              {"l": [{"k": 1, "v": 7}], "r": []})
    assert star.outputs == [{"k": 1, "v": 7}]


def test_a_missing_field_of_a_real_tuple_is_still_an_error():
    query = "SELECT RSTREAM l:v AS lv, r:w AS rw FROM l [RANGE 1 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] ON l:k = r:k"
    result = run_query_detailed(query, {"l": [{"k": 1, "v": 7}], "r": [{"k": 1, "v": 2}]}, ["r", "l"])
    assert [d.error for d in result.dropped] == ["field 'w' is missing"]
    assert result.outputs == []


def test_errors_drop_the_step_and_the_padded_row_is_tried_again():
    query = ("SELECT ISTREAM l:v AS lv, r:v AS rv FROM l [RANGE 2 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] "
             "ON l:k = r:k WHERE 10 / l:v > 1")
    inputs = {"l": [{"k": 1, "v": 0}, {"k": 2, "v": 5}, {"k": 3, "v": 4}], "r": [{"k": 2, "v": 1}]}
    result = run_query_detailed(query, inputs, ["l", "r", "l", "l"])
    # l1 (v 0) fails its padded row's WHERE at each step while it is in the left window (3 steps); the
    # step of l2 fails with it, so the pair (l2, r1) formed then never exists (as in the inner kernel)
    # and l2 gets a padded row when l3 pushes l1 out.
    assert [d.error for d in result.dropped] == ["division by zero"] * 3
    assert result.outputs == [{"lv": 5, "rv": None}, {"lv": 4, "rv": None}]
    on_error = run_query_detailed("SELECT RSTREAM l:v AS lv FROM l [RANGE 1 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] ON r:v",
                                  {"l": [{"v": 1}], "r": [{"v": 2}]}, ["r", "l"])
    assert [d.error for d in on_error.dropped] == ["the ON clause must be a bool, not int: 2"]


def test_grouping_counts_the_padded_rows():
    query = ("SELECT RSTREAM l:k AS k, count(*) AS rows, count(r:v) AS matched FROM l [RANGE 3 TUPLES] "
             "LEFT JOIN r [RANGE 3 TUPLES] ON l:k = r:k GROUP BY l:k")
    inputs = {"r": [{"k": 1, "v": 1}, {"k": 1, "v": 2}], "l": [{"k": 1}, {"k": 2}, {"k": 2}]}
    result = run_query_detailed(query, inputs, ["r", "r", "l", "l", "l"])
    assert result.outputs[-2:] == [{"k": 1, "rows": 2, "matched": 2}, {"k": 2, "rows": 2, "matched": 0}]


def test_self_join_through_aliases():
    query = ("SELECT ISTREAM a:v AS av, b:v AS bv FROM s [RANGE 3 TUPLES] AS a LEFT JOIN s [RANGE 2 TUPLES] AS b "
             "ON a:k = b:k AND a:v < b:v")
    inputs = {"s": [{"k": 1, "v": 1}, {"k": 1, "v": 2}, {"k": 2, "v": 3}, {"k": 1, "v": 4}]}
    result = run_query_detailed(query, inputs)
    # t1 pairs with t2 (step 2); t1 leaves a's window as t4 arrives, and t2, unmatched until then,
    # pairs with t4 (its padded row leaves the relation, ISTREAM does not show that)
    assert result.outputs == [{"av": 1, "bv": None}, {"av": 1, "bv": 2}, {"av": 2, "bv": None},
                              {"av": 3, "bv": None}, {"av": 2, "bv": 4}, {"av": 4, "bv": None}]


def test_kernel_analyzer_and_unparse():
    text = "SELECT RSTREAM l:v FROM l [RANGE 2 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] AS q ON l:k = q:k WHERE l:v > 1"
    stmt = parse_select(text)
    assert isinstance(build_processor(stmt), LeftJoinProcessor)
    assert parse_one(unparse(stmt)) == stmt and "LEFT JOIN" in unparse(stmt)
    from sbpy.bql.errors import BQLAnalysisError

    with pytest.raises(BQLAnalysisError) as info:
        parse_select("SELECT RSTREAM count(*) FROM l [RANGE 2 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] ON count(r:k) > 1")
    assert info.value.message == "aggregate function 'count' cannot be used in ON"
    with pytest.raises(BQLAnalysisError) as info:
        parse_select("SELECT RSTREAM l:v FROM l [RANGE 2 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] ON k = r:k")
    assert info.value.message == "'k' needs a stream prefix (such as 'l:') when FROM has several streams"


def test_plan_names_the_kernel_and_a_subquery_can_be_joined():
    from sbpy.bql.plan.planner import describe_stage

    text = "SELECT RSTREAM l:v FROM l [RANGE 2 TUPLES] LEFT JOIN r [RANGE 1 TUPLES] ON l:k = r:k"
    stage = describe_stage("q", text, ["l", "r"])
    assert stage.kernel == "select" and not stage.stateless
    assert stage.implementation.startswith("LEFT JOIN kernel")
    query = ("SELECT RSTREAM l:v AS lv, t:v AS tv FROM l [RANGE 2 TUPLES] LEFT JOIN "
             "(SELECT ISTREAM k, v * 10 AS v FROM r [RANGE 1 TUPLES]) [RANGE 1 TUPLES] AS t ON l:k = t:k")
    result = run_query_detailed(query, {"l": [{"k": 1, "v": 1}, {"k": 2, "v": 2}], "r": [{"k": 2, "v": 3}]},
                                ["l", "r", "l"])
    assert result.outputs == [{"lv": 1, "tv": None}, {"lv": 1, "tv": None}, {"lv": 1, "tv": None},
                              {"lv": 2, "tv": 30}]
