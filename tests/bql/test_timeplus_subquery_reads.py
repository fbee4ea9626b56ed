"""A Timeplus query reading a subquery or a CTE without RANGE (seed 003's "Vanilla Subquery", "global over
tumble", "global over global"): ``SELECT ... FROM (SELECT ...) GROUP BY ...`` and ``WITH x AS (...) SELECT
... FROM x ...`` give exactly the rows of the two-stream form — ``CREATE STREAM x AS <inner>`` and the
outer query reading the bare stream ``x`` — with the inner SELECT's output handed over at once, ticks
going to the inner query first (``runtime/subquery.py``)."""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

CASES = [
    # (inner, outer over x): a vanilla subquery, global over tumble, global over global, a tail over a tail
    ("SELECT * FROM s WHERE cpu > 80", "SELECT device, max(cpu) FROM x GROUP BY device"),
    ("SELECT device, avg(cpu) AS a FROM tumble(s, 5s) GROUP BY device, window_start",
     "SELECT device, max(a) FROM x GROUP BY device"),
    ("SELECT device, avg(cpu) AS a FROM s GROUP BY device", "SELECT device, max_k(a, 2) FROM x GROUP BY device"),
    ("SELECT device, cpu * 2 AS c FROM s WHERE cpu > 50", "SELECT c FROM x WHERE c < 190"),
    ("SELECT device, cpu FROM s", "SELECT device, count() AS n FROM x GROUP BY device EMIT ON UPDATE"),
]
ROWS = st.lists(st.tuples(st.sampled_from(["d1", "d2"]), st.integers(0, 100), st.integers(0, 3)), max_size=25)


def _steps(rows):
    """(kind, value) steps: each row arrives at its time; a tick follows every row with gap 3."""
    t, out = 0, []
    for device, cpu, gap in rows:
        t += gap
        out.append(("row", Tuple({"device": device, "cpu": cpu, "ts": t}, EPOCH + dt.timedelta(seconds=t), 0, "s")))
        if gap == 3:
            out.append(("tick", EPOCH + dt.timedelta(seconds=t, milliseconds=500)))
    return out


def _collect(step, out, dropped):
    out.extend(json_ready(t.data) for t in step.outputs)
    dropped.extend(d.error for d in step.dropped)


def fused(query, rows):
    proc = build_processor(parse_select(query))
    out, dropped = [], []
    for seq, (kind, value) in enumerate(_steps(rows), start=1):
        if kind == "row":
            value.seq = seq
            _collect(proc.process(value), out, dropped)
        else:
            _collect(proc.tick(value), out, dropped)
    _collect(proc.finish("s"), out, dropped)
    return out, dropped


def two_streams(inner, outer, rows):
    first, second = build_processor(parse_select(inner)), build_processor(parse_select(outer))
    out, dropped = [], []

    def forward(step):
        dropped.extend(d.error for d in step.dropped)
        for t in step.outputs:
            _collect(second.process(Tuple(t.data, t.ts, t.seq, "x")), out, dropped)

    for seq, (kind, value) in enumerate(_steps(rows), start=1):
        if kind == "row":
            value.seq = seq
            forward(first.process(value))
        else:
            forward(first.tick(value))
            _collect(second.tick(value), out, dropped)
    forward(first.finish("s"))
    _collect(second.finish("x"), out, dropped)
    return out, dropped


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CASES), ROWS)
def test_bare_subquery_read_equals_the_two_stream_form(case, rows):
    inner, outer = case
    expected = two_streams(inner, outer, rows)
    assert fused(outer.replace("FROM x", f"FROM ({inner})"), rows) == expected
    assert fused(outer.replace("FROM x", f"FROM ({inner}) AS t"), rows) == expected
    assert fused(f"WITH x AS ({inner}) {outer}", rows) == expected


WINDOWED = [  # a window function over a subquery: tumble over tumble (seed 003), hop over a filter
    ("SELECT device, avg(cpu) AS a, any(window_start) AS start FROM tumble(s, 5s) GROUP BY device, window_start",
     "SELECT device, max(a), window_end FROM tumble({}, start, 10s) GROUP BY device, window_end"),
    ("SELECT * FROM s WHERE cpu > 30", "SELECT count(*) AS n, window_start FROM hop({}, 2s, 4s) GROUP BY window_start"),
]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(WINDOWED), ROWS)
def test_window_function_over_a_subquery_equals_the_two_stream_form(case, rows):
    inner, outer = case
    expected = two_streams(inner, outer.format("x"), rows)
    assert fused(outer.format(f"({inner})"), rows) == expected
    assert fused(f"WITH x AS ({inner}) " + outer.format("x"), rows) == expected


def test_only_the_stream_argument_may_be_a_subquery():
    from sbpy.bql.errors import BQLSyntaxError

    with pytest.raises(BQLSyntaxError, match="only be the stream"):
        parse_select("SELECT count(*) FROM tumble(s, (SELECT * FROM s), 5s) GROUP BY window_start")


@pytest.mark.parametrize("query,message", [
    # a bare subquery is Timeplus' bare stream only where a bare stream is (a tail or EMIT)
    ("SELECT RSTREAM x FROM (SELECT RSTREAM x FROM src [RANGE 1 TUPLES]) AS t",
     "the subquery 't' needs a window such as [RANGE 1 TUPLES]"),
    ("SELECT x FROM (SELECT * FROM src) AS t, src [RANGE 1 TUPLES]",
     "an emitter (RSTREAM, ISTREAM or DSTREAM) is required"),
    ("SELECT count(*) AS n FROM (SELECT * FROM src) [RANGE 2 TUPLES] AS t EMIT ON UPDATE",
     "a Timeplus window query cannot read a subquery (yet)"),
])
def test_where_a_bare_subquery_is_refused(query, message):
    with pytest.raises(BQLAnalysisError) as err:
        parse_select(query)
    assert message in str(err.value)


def test_unparse_round_trips():
    from sbpy.bql.ast.unparse import unparse
    from sbpy.bql.parser import parse_one

    for inner, outer in WINDOWED:
        stmt = parse_one(outer.format(f"({inner})"))
        assert parse_one(unparse(stmt)) == stmt
    stmt = parse_one(f"SELECT device, max(cpu) FROM ({CASES[0][0]}) GROUP BY device")
    assert parse_one(unparse(stmt)) == stmt
