"""MATCH_RECOGNIZE's newer forms through the REST API (docs/match-recognize.md): MATCH_ROWTIME() and
the time attribute with a DESC secondary key, WITHIN, count(A.*), a DISTINCT aggregate, the SETTINGS
clause (YQL's reorder settings, the global watermark), and input from a subquery, a CTE or a window
function — each a stream written to a file sink whose rows must be exactly what the in-process runtime
gives for the same query and input.
Topologies run on the Spark-free local runner (rest_util.local_server)."""
from __future__ import annotations

import pytest
from rest_util import local_server, streams_into_files
from sbpy.bql.runtime.testing import run_query_detailed

T0 = 1580673600
# two symbols, prices that rise and fall, timestamps slightly out of order within each symbol
ROWS = [{"ts": T0 + i * 3 + (2 if i % 5 == 0 else 0), "sym": "ab"[i % 2], "p": (i * 7) % 13 + 10, "i": i}
        for i in range(60)]

BODY = ("PARTITION BY sym ORDER BY ts MEASURES FIRST(A.i) AS first_i, LAST(C.i) AS last_i, count(B.*) AS nb "
        "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C) "
        "DEFINE B AS B.p > PREV(B.p), C AS C.p < PREV(C.p)")

QUERIES = [
    # the rows' time attribute with a DESC secondary key, MATCH_ROWTIME(), count(A.*)
    "SELECT RSTREAM * FROM s MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts, p DESC "
    "MEASURES FIRST(A.i) AS first_i, MATCH_ROWTIME() AS at, count(B.*) AS nb ONE ROW PER MATCH "
    "AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C) DEFINE B AS B.p > PREV(B.p), C AS C.p < PREV(C.p))",
    # WITHIN bounds each match's time span
    "SELECT RSTREAM * FROM s MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES FIRST(A.i) AS first_i, "
    "LAST(C.i) AS last_i ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C) "
    "WITHIN INTERVAL '10' SECOND DEFINE B AS B.p > PREV(B.p), C AS C.p < PREV(C.p))",
    # SETTINGS: YQL's reorder buffer and the global watermark
    "SELECT RSTREAM * FROM s MATCH_RECOGNIZE (" + BODY + " SETTINGS time_order_recover_delay = 5, "
    'watermark = "global")',
    # a DISTINCT aggregate in MEASURES
    "SELECT RSTREAM * FROM s MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts MEASURES "
    "count(DISTINCT B.p) AS kinds, FIRST(A.i) AS first_i ONE ROW PER MATCH PATTERN (A B+ C) "
    "DEFINE B AS B.p > PREV(B.p), C AS C.p < PREV(C.p))",
    # input from a subquery, a CTE and a window function
    "SELECT * FROM (SELECT RSTREAM sym, ts, i, p * 2 AS p FROM s [RANGE 1 TUPLES] WHERE i % 7 != 3) "
    "MATCH_RECOGNIZE (" + BODY + ") MR",
    "WITH f AS (SELECT RSTREAM sym, ts, i, p FROM s [RANGE 1 TUPLES] WHERE p != 15) "
    "SELECT RSTREAM * FROM f MATCH_RECOGNIZE (" + BODY + ") AS m",
    "SELECT * FROM tumble(s, ts, 20s) MATCH_RECOGNIZE (PARTITION BY sym ORDER BY ts "
    "MEASURES FIRST(A.i) AS first_i, LAST(B.window_start) AS ws, count(B.*) AS nb ONE ROW PER MATCH "
    "PATTERN (A B+) DEFINE B AS B.window_start = A.window_start AND B.p > PREV(B.p))",
]


@pytest.fixture
def local(server_factory, tmp_path):
    with local_server(server_factory, tmp_path) as (_, c):
        yield c


@pytest.mark.parametrize("query", QUERIES)
def test_stream_through_the_server_equals_the_runtime(local, tmp_path, query):
    expected = run_query_detailed(query, {"s": ROWS}, timestamp_field="ts")
    assert expected.outputs
    got = streams_into_files(local, tmp_path, ROWS, {"x": query}, {"x": len(expected.outputs)})
    assert got["x"] == expected.outputs
