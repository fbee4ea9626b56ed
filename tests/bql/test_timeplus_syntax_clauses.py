"""Timeplus clauses: ``count()``, HAVING on a select alias, ``LIMIT n OFFSET m``.

References: ``count()`` against ``count(*)``, a HAVING alias against the expression written out, and
``LIMIT n OFFSET m`` against the rows of the same query without LIMIT/OFFSET, sliced — over random inputs.
SensorBee queries keep SensorBee's readings (``count()`` is an arity error; ``c`` in HAVING is a field).
"""
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.runtime.testing import parse_select, run_query, run_query_detailed

T0 = 1580673600
events = st.lists(st.tuples(st.integers(0, 60), st.sampled_from("abc"), st.integers(-3, 9)), max_size=30)


def at(seconds):
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc)


def _rows(evs):
    return [{"ts": T0 + t, "k": k, "v": v} for t, k, v in evs]


WINDOWED = [
    "SELECT RSTREAM window_start, k, {count} AS c, sum(v) AS s FROM tumble(src, ts, 10s) GROUP BY window_start, k{tail}",
    "SELECT RSTREAM window_start, {count} AS c FROM hop(src, ts, 5s, 15s) GROUP BY window_start{tail}",
    "SELECT RSTREAM k, {count} AS c FROM src GROUP BY k{tail} EMIT ON UPDATE",
    "SELECT RSTREAM window_start, window_end, k, {count} AS c FROM session(src, ts, 4s) "
    "GROUP BY window_start, window_end, k{tail}",
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(WINDOWED), events)
def test_count_without_argument_is_count_star(template, evs):
    rows = _rows(evs)
    assert (run_query(template.format(count="count()", tail=""), {"src": rows})
            == run_query(template.format(count="count(*)", tail=""), {"src": rows}))


def test_count_without_argument_counts_rows_with_nulls():
    rows = [{"ts": T0, "v": None}, {"ts": T0 + 1, "v": 1}, {"ts": T0 + 2, "v": None}]
    out = run_query("SELECT RSTREAM count() AS n, count(v) AS nv FROM tumble(src, ts, 10s) GROUP BY window_start",
                    {"src": rows})
    assert out == [{"n": 3, "nv": 1}]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(WINDOWED), st.integers(0, 4), events)
def test_having_on_an_alias_is_having_on_its_expression(template, bound, evs):
    rows = _rows(evs)
    alias = run_query(template.format(count="count(*)", tail=f" HAVING c > {bound} AND s >= 0")
                      if "sum(v)" in template else
                      template.format(count="count(*)", tail=f" HAVING c > {bound}"), {"src": rows})
    written = run_query(template.format(count="count(*)", tail=f" HAVING count(*) > {bound} AND sum(v) >= 0")
                        if "sum(v)" in template else
                        template.format(count="count(*)", tail=f" HAVING count(*) > {bound}"), {"src": rows})
    assert alias == written


def test_having_alias_of_count_without_argument():
    rows = [{"ts": T0 + i} for i in (0, 1, 6, 11, 12, 13)]
    out = run_query("SELECT RSTREAM window_start, count() AS c FROM tumble(src, ts, 5s) GROUP BY window_start "
                    "HAVING c > 1", {"src": rows})
    assert out == [{"window_start": T0, "c": 2}, {"window_start": T0 + 10, "c": 3}]


def test_an_alias_wins_over_an_input_field_of_the_same_name_in_having():
    rows = [{"ts": T0 + i, "v": v} for i, v in enumerate([5, 1, 1])]
    # v in HAVING is max(v) (= 5), not an input field: the window passes
    out = run_query("SELECT RSTREAM window_start, max(v) AS v FROM tumble(src, ts, 10s) GROUP BY window_start "
                    "HAVING v > 4", {"src": rows})
    assert out == [{"window_start": T0, "v": 5}]


def test_sensorbee_queries_keep_sensorbee_readings():
    with pytest.raises(BQLAnalysisError, match="function 'count' takes 1 argument, got 0"):
        parse_select("SELECT ISTREAM count() AS c FROM src [RANGE 3 TUPLES]")
    with pytest.raises(BQLAnalysisError, match="field 'c' in HAVING must be grouped"):
        parse_select("SELECT ISTREAM count(*) AS c FROM src [RANGE 3 TUPLES] HAVING c > 1")


LIMITED = [  # the query with "{lim}" where LIMIT n OFFSET m goes
    "SELECT RSTREAM window_start, k, count(*) AS c FROM tumble(src, ts, 10s) GROUP BY window_start, k{lim}",
    "SELECT RSTREAM window_start, count(*) AS c FROM hop(src, ts, 5s, 15s) GROUP BY window_start{lim}",
    "SELECT RSTREAM k, count(*) AS c FROM src GROUP BY k{lim} EMIT ON UPDATE",
    "SELECT RSTREAM k, v FROM src{lim} EMIT ON UPDATE",
    "SELECT RSTREAM window_start, k, v FROM hop(src, ts, 5s, 10s){lim}",
]


@settings(max_examples=80, deadline=None)
@given(st.sampled_from(LIMITED), st.integers(0, 6), st.integers(0, 6), events)
def test_limit_offset_is_a_slice_of_the_unlimited_rows(template, limit, offset, evs):
    rows = _rows(evs)
    plain = run_query(template.format(lim=""), {"src": rows})
    limited = run_query_detailed(template.format(lim=f" LIMIT {limit} OFFSET {offset}"), {"src": rows})
    assert limited.outputs == plain[offset:offset + limit]
    assert limited.done == (len(plain) >= offset + max(limit, 1))  # LIMIT 0 stops at the first row


def test_offset_without_a_timeplus_query_or_with_order_by_is_an_error_with_a_caret():
    with pytest.raises(BQLAnalysisError, match="OFFSET can only be used in a Timeplus query") as info:
        parse_select("SELECT ISTREAM v FROM src [RANGE 1 TUPLES] LIMIT 2 OFFSET 1")
    assert (info.value.span.line, info.value.span.column) == (1, 1)
    with pytest.raises(BQLAnalysisError, match="OFFSET cannot be combined with ORDER BY") as info:
        parse_select("SELECT RSTREAM v FROM src ORDER BY v LIMIT 2 OFFSET 1 EMIT ON UPDATE")
    assert info.value.span.column == 36


def test_offset_state_survives_a_snapshot():
    from sbpy.bql.runtime import build_processor
    from sbpy.bql.runtime.processor import Tuple
    from sbpy.bql.runtime.testing import run_processor

    q = "SELECT RSTREAM k, v FROM src LIMIT 3 OFFSET 4 EMIT ON UPDATE"
    rows = _rows([(i, "a", i) for i in range(10)])
    whole = run_query(q, {"src": rows})
    first = build_processor(parse_select(q))
    head = []
    for seq, row in enumerate(rows[:3], start=1):
        head += [t.data for t in first.process(Tuple(row, at(row["ts"]), seq, "src")).outputs]
    second = build_processor(parse_select(q))
    second.restore(first.snapshot())
    tail = run_processor(second, {"src": rows[3:]}).outputs
    assert head + tail == whole == [{"k": "a", "v": v} for v in (4, 5, 6)]


def test_count_and_having_alias_inside_a_cte_and_a_union():
    rows = _rows([(0, "a", 1), (1, "a", 2), (2, "b", 3), (12, "a", 4)])
    inner = ("SELECT RSTREAM window_start AS ws, k, count() AS c FROM tumble(src, ts, 10s) "
             "GROUP BY window_start, k HAVING c > 1")
    direct = run_query(inner, {"src": rows})
    assert direct == [{"ws": T0, "k": "a", "c": 2}]
    via_cte = run_query(f"WITH w AS ({inner}) SELECT RSTREAM ws, c FROM w [RANGE 1 TUPLES]", {"src": rows})
    assert via_cte == [{"ws": r["ws"], "c": r["c"]} for r in direct]
    union = run_query(f"{inner} UNION ALL {inner}", {"src": rows})
    assert union == direct + direct


def test_unparse_keeps_offset():
    from sbpy.bql.ast.unparse import unparse
    from sbpy.bql.parser import parse_one

    stmt = parse_one("SELECT RSTREAM k, v FROM src LIMIT 3 OFFSET 4 EMIT ON UPDATE")
    assert stmt.offset == 4 and parse_one(unparse(stmt)) == stmt
