"""Timeplus query syntax through the REST API (docs/timeplus.md): interval shorthands, the time-zone
argument, count(), HAVING on an alias, LIMIT ... OFFSET, latest / earliest / any / max_k, lag,
emit_version, EMIT STREAM, AND TIMEOUT and LAST, the streaming tail, PARTITION BY, SETTINGS, PERIODIC ... ON
UPDATE and processing-time windows (now64()) in streams written to a file sink, and their syntax and
analysis errors with positions.
Topologies run on the Spark-free local runner; each sink file must hold exactly what the in-process
runtime gives for the same query and input."""
from __future__ import annotations

import pytest
from rest_util import empty_source, local_server, post, streams_into_files
from sbpy.bql.runtime.testing import run_query_detailed

T0 = 1580673600
ROWS = [{"ts": T0 + (i * 7) % 50 + i // 3, "k": "ab"[i % 2], "v": (i * 5) % 11 - 3} for i in range(60)]


@pytest.fixture
def local(server_factory, tmp_path):
    """A client of a local-runner server with topology ``t`` (rest_util.local_server)."""
    with local_server(server_factory, tmp_path) as (_, c):
        yield c


QUERIES = [
    'SELECT RSTREAM window_start, k, count() AS c, latest(v) AS l, earliest(v) AS e, any(v) AS a, '
    'max_k(v, 2) AS top, emit_version() AS ev FROM tumble(s, ts, 5s, "UTC") GROUP BY window_start, k '
    "HAVING c > 1 LIMIT 6 OFFSET 2 EMIT AFTER WATERMARK WITH DELAY 2s",
    "SELECT RSTREAM window_end, count() AS c FROM hop(s, ts, 10s, 1m) GROUP BY window_end",
    'SELECT RSTREAM v, lag(v) AS p1, lag(v, 3, -100) AS p3 FROM s WHERE k = "a" EMIT ON UPDATE',
    "SELECT RSTREAM k, count() AS c, emit_version() AS ev FROM s GROUP BY k LIMIT 10 OFFSET 5 EMIT ON UPDATE",
    "SELECT RSTREAM window_start, count() AS c FROM session(s, ts, 3s) GROUP BY window_start "
    "EMIT STREAM AFTER WATERMARK AND TIMEOUT 1h",
    "SELECT RSTREAM k, count() AS c, sum(v) AS total FROM s GROUP BY k EMIT LAST 20s",
    # streaming tail, PARTITION BY substreams, SETTINGS, PERIODIC ... ON UPDATE
    'SELECT k, v FROM s WHERE v > 0 AND k = "a"',
    "SELECT RSTREAM window_start, k, count() AS c FROM tumble(s, ts, 5s) GROUP BY window_start, k PARTITION BY k",
    "SELECT v, lag(v) AS p FROM s PARTITION BY k LIMIT 25",
    "SELECT RSTREAM window_end, k, count() AS c FROM tumble(s, ts, 5s) GROUP BY window_end, k "
    "EMIT LAST 1h SETTINGS max_keep_windows = 720",
    "SELECT RSTREAM k, count() AS c FROM s GROUP BY k EMIT PERIODIC 1h ON UPDATE",
]


@pytest.mark.parametrize("query", QUERIES)
def test_stream_through_the_server_equals_the_runtime(local, tmp_path, query):
    expected = run_query_detailed(query, {"s": ROWS})
    assert expected.outputs
    got = streams_into_files(local, tmp_path, ROWS, {"x": query}, {"x": len(expected.outputs)})
    assert got["x"] == expected.outputs


def test_syntax_error_of_an_interval_unit_points_at_it(local):
    r = post(local, "SELECT RSTREAM count() AS c FROM tumble(s, ts, 5M) GROUP BY window_start;")
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "E0006"
    lines = err["meta"]["parse_errors"]
    assert lines[0] == "statement has a syntax error near line 1, symbol 49:"
    assert lines[2] == " " * 48 + "^"


def test_unknown_time_zone_and_misplaced_lag_are_refused(local, tmp_path):
    empty_source(local, tmp_path)
    zone = post(local, 'CREATE STREAM x AS SELECT RSTREAM count() AS c FROM tumble(s, ts, 5s, "Nowhere/City") '
                       "GROUP BY window_start;").json()["error"]
    assert zone["code"] == "E0006" and "unknown time zone 'Nowhere/City' in 'tumble'" in "\n".join(
        zone["meta"]["parse_errors"])
    lag = post(local, "CREATE STREAM y AS SELECT RSTREAM v FROM s WHERE lag(v) > 0 EMIT ON UPDATE;").json()["error"]
    assert lag["code"] == "E0007" and "lag() can only be used in the select list" in lag["meta"]["error"]
    offset = post(local, "CREATE STREAM z AS SELECT ISTREAM v FROM s [RANGE 1 TUPLES] LIMIT 1 OFFSET 1;").json()
    assert "OFFSET can only be used in a Timeplus query" in offset["error"]["meta"]["error"]


def test_processing_time_window_tags_each_row_with_its_wall_clock_window(local, tmp_path):
    """Rows of a non-aggregating now64() window come at once, in order, each in a 5 s grid window (which
    window depends on the wall clock, so only the grid is checked)."""
    query = "SELECT RSTREAM v, window_start, window_end FROM tumble(s, now64(), 5s)"
    got = streams_into_files(local, tmp_path, ROWS, {"x": query}, {"x": len(ROWS)})["x"]
    assert [r["v"] for r in got] == [r["v"] for r in ROWS]
    assert all(r["window_end"] - r["window_start"] == 5 and r["window_start"] % 5 == 0 for r in got)


def test_settings_and_partition_errors_name_the_clause(local, tmp_path):
    empty_source(local, tmp_path)
    unknown = post(local, "CREATE STREAM x AS SELECT RSTREAM count() AS c FROM s EMIT PERIODIC 1s "
                          "SETTINGS max_keep = 3;").json()["error"]
    assert unknown["code"] == "E0007" and "unknown setting 'max_keep'" in unknown["meta"]["error"]
    partition = post(local, "CREATE STREAM y AS SELECT RSTREAM v FROM s [RANGE 1 TUPLES] PARTITION BY k;").json()
    assert "PARTITION BY can only be used in a Timeplus query" in partition["error"]["meta"]["error"]
