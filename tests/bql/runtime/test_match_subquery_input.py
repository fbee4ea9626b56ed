"""MATCH_RECOGNIZE over a subquery or a CTE (issue 14): ``FROM (SELECT ...) MATCH_RECOGNIZE (...)`` and
``WITH x AS (SELECT ...) SELECT ... FROM x MATCH_RECOGNIZE (...)`` give exactly the rows of the two-stream
form — ``CREATE STREAM x AS SELECT ...`` and a MATCH_RECOGNIZE query reading ``x`` — whose fused pipeline
hands each tuple the inner SELECT emits to the pattern at once (docs/match-recognize.md)."""
from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.parser import parse_one
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)

BODY = ("PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS t0, LAST(C.t) AS t1, count(B.*) AS nb, sum(B.p) AS sb "
        "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B+ C) "
        "DEFINE A AS A.p > 0, B AS B.p > PREV(B.p), C AS C.p < LAST(B.p)")
INNERS = [
    # a filter and a computed column; 10 / v fails (drops) for v = 0
    "SELECT RSTREAM k, t, 10 / v AS p FROM s [RANGE 1 TUPLES] WHERE v < 8",
    # an aggregate over a window: the running sum of the last two values of each key
    "SELECT RSTREAM k, max(t) AS t, sum(v) AS p FROM s [RANGE 2 TUPLES] GROUP BY k",
]
ROWS = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(-3, 9)), max_size=30)


def _tuples(rows):
    return [Tuple({"k": k, "t": i, "v": v}, T0 + dt.timedelta(seconds=i), i + 1, "s") for i, (k, v) in enumerate(rows)]


def _collect(step, out, dropped):
    out.extend((json_ready(t.data), t.ts) for t in step.outputs)
    dropped.extend(d.error for d in step.dropped)


def fused(query, rows):
    proc = build_processor(parse_select(query))
    out, dropped = [], []
    for tup in _tuples(rows):
        _collect(proc.process(tup), out, dropped)
    _collect(proc.finish("s"), out, dropped)
    return out, dropped


def two_streams(inner, rows, body=BODY):
    """``CREATE STREAM x AS <inner>`` and ``SELECT RSTREAM * FROM x MATCH_RECOGNIZE (<body>)``."""
    first = build_processor(parse_select(inner))
    second = build_processor(parse_select(f"SELECT RSTREAM * FROM x MATCH_RECOGNIZE ({body})"))
    out, dropped = [], []

    def forward(step):
        dropped.extend(d.error for d in step.dropped)
        for t in step.outputs:
            _collect(second.process(Tuple(t.data, t.ts, t.seq, "x")), out, dropped)

    for tup in _tuples(rows):
        forward(first.process(tup))
    forward(first.finish("s"))
    _collect(second.finish("x"), out, dropped)
    return out, dropped


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(INNERS), ROWS)
def test_subquery_input_equals_the_two_stream_form(inner, rows):
    expected = two_streams(inner, rows)
    assert fused(f"SELECT * FROM ({inner}) MATCH_RECOGNIZE ({BODY}) MR", rows) == expected
    assert fused(f"WITH x AS ({inner}) SELECT RSTREAM * FROM x MATCH_RECOGNIZE ({BODY}) AS m", rows) == expected


def test_subquery_input_finds_the_matches():
    rows = [("a", 1), ("a", 2), ("a", 4), ("a", 3), ("b", 5)]
    inner = "SELECT RSTREAM k, t, v AS p FROM s [RANGE 1 TUPLES]"
    out, dropped = fused(f"SELECT * FROM ({inner}) MATCH_RECOGNIZE ({BODY})", rows)
    assert [row for row, _ in out] == [{"k": "a", "t0": 0, "t1": 3, "nb": 2, "sb": 6},  # A 1, B 2 4, C 3
                                       {"k": "a", "t0": 1, "t1": 3, "nb": 1, "sb": 4}]  # A 2, B 4, C 3
    assert dropped == []


def test_measures_and_where_read_the_match_alias():
    inner = "SELECT RSTREAM k, t, v AS p FROM s [RANGE 1 TUPLES]"
    q = f"SELECT RSTREAM m:t0 AS start FROM ({inner}) MATCH_RECOGNIZE ({BODY}) AS m WHERE m:nb > 1"
    out, _ = fused(q, [("a", 1), ("a", 2), ("a", 4), ("a", 3), ("a", 1), ("a", 5), ("a", 4)])
    assert [row for row, _ in out] == [{"start": 0}]


def test_unparse_round_trips():
    for text in (f"SELECT RSTREAM * FROM ({INNERS[0]}) MATCH_RECOGNIZE ({BODY}) AS mr",
                 f"SELECT RSTREAM * FROM ({INNERS[1]}) MATCH_RECOGNIZE ({BODY})",
                 "SELECT RSTREAM * FROM s MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS A.x = 1) AS m"):
        stmt = parse_one(text)
        assert parse_one(unparse(stmt)) == stmt


def sbpy_check(path, script):
    """``sbpy check PATH`` on ``script``: exit code and output."""
    import argparse
    import io

    from sbpy.server.cli import check

    path.write_text(script)
    out = io.StringIO()
    return check.main(argparse.Namespace(file=str(path)), stdin=io.StringIO(""), stdout=out), out.getvalue()


def test_sbpy_check_resolves_the_subquery_inputs(tmp_path):
    rc, out = sbpy_check(tmp_path / "q.bql", 'CREATE SOURCE s TYPE file WITH path = "s.jsonl";\n'
                         f"SELECT * FROM ({INNERS[0]}) MATCH_RECOGNIZE ({BODY}) MR;\n")
    assert (rc, out) == (0, "")
    rc, out = sbpy_check(tmp_path / "bad.bql", f"SELECT * FROM ({INNERS[0]}) MATCH_RECOGNIZE ({BODY}) MR;\n")
    assert rc == 1 and "stream 's' was not found" in out


# ``tumble|hop|session(...) MATCH_RECOGNIZE (...)``: the window function's rows (window_start/window_end
# added) are the pattern's input, as with the subquery `(SELECT * FROM tumble(...))` written out.
WINDOW_BODY = ("PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS t0, LAST(B.window_start) AS ws, "
               "LAST(B.window_end) AS we, count(B.*) AS nb PATTERN (A B+) "
               "DEFINE A AS A.v > 0, B AS B.window_start = A.window_start AND B.v > PREV(B.v)")
WINDOWS = ["tumble(s, 5s)", "hop(s, 2s, 4s)", "tumble(s, t, 3 SECONDS)"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(WINDOWS), ROWS)
def test_window_function_input_equals_the_two_stream_form(window, rows):
    expected = two_streams(f"SELECT * FROM {window}", rows, WINDOW_BODY)
    assert fused(f"SELECT * FROM {window} MATCH_RECOGNIZE ({WINDOW_BODY}) MR", rows) == expected
    assert fused(f"SELECT RSTREAM * FROM (SELECT * FROM {window}) MATCH_RECOGNIZE ({WINDOW_BODY})", rows) == expected


def test_window_function_input_finds_the_matches():
    rows = [("a", 1), ("a", 2), ("a", 3), ("a", 4), ("a", 5), ("a", 6), ("a", 7)]  # t = 0 .. 6 seconds
    out, dropped = fused(f"SELECT * FROM tumble(s, 5s) MATCH_RECOGNIZE ({WINDOW_BODY})", rows)
    # ONE ROW PER MATCH, SKIP PAST LAST ROW: B+ runs to the end of a 5-second window, whose end is
    # known when the next row (of the next window, or the end of input) fails B
    assert [row for row, _ in out] == [
        {"k": "a", "t0": 0, "ws": 1704067200, "we": 1704067205, "nb": 4},
        {"k": "a", "t0": 5, "ws": 1704067205, "we": 1704067210, "nb": 1},
    ]
    assert dropped == []


def test_only_window_functions_feed_match_recognize():
    import pytest
    from sbpy.bql.errors import BQLError

    with pytest.raises(BQLError, match="MATCH_RECOGNIZE reads a stream, a subquery or a window function"):
        parse_one(f"SELECT * FROM my_udsf(s, 3) MATCH_RECOGNIZE ({WINDOW_BODY})")
    stmt = parse_one(f"SELECT RSTREAM * FROM hop(s, 2s, 4s) MATCH_RECOGNIZE ({WINDOW_BODY}) AS m")
    assert parse_one(unparse(stmt)) == stmt
