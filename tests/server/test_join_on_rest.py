"""JOIN ... ON / USING and LEFT / RIGHT JOIN through the REST API (docs/sql-breadth.md): streams written
to file sinks on the Spark-free local runner must hold exactly what the in-process kernel gives, the
JOIN spelling exactly what the FROM-list spelling gives in the same topology; bad joins answer E0006
with the caret lines; EXPLAIN names the LEFT JOIN kernel. One source feeds both sides (a self-join
through aliases), so the arrival order, and with it the expected rows, is fixed."""
from __future__ import annotations

import pytest
from rest_util import empty_source, local_server, post, streams_into_files
from sbpy.bql.runtime.testing import run_query_detailed

ROWS = [{"id": i, "kind": ("bid", "ask", "sell")[i % 3] if i % 5 else None, "price": (i * 7) % 23}
        for i in range(40)]


@pytest.fixture
def local(server_factory, tmp_path):
    """A client of a local-runner server with topology ``t`` (rest_util.local_server)."""
    with local_server(server_factory, tmp_path) as (_, c):
        yield c


STREAMS = {  # name → query; the pairs (j, c) and (l, r) must agree with each other
    "j": ("SELECT ISTREAM a:id AS a, b:id AS b FROM s [RANGE 4 TUPLES] AS a JOIN s [RANGE 3 TUPLES] AS b "
          "USING (kind) WHERE a:price < b:price"),
    "c": ("SELECT ISTREAM a:id AS a, b:id AS b FROM s [RANGE 4 TUPLES] AS a, s [RANGE 3 TUPLES] AS b "
          "WHERE (a:kind = b:kind) AND (a:price < b:price)"),
    "l": ("SELECT ISTREAM a:id AS a, b:id AS b FROM s [RANGE 4 TUPLES] AS a LEFT JOIN s [RANGE 3 TUPLES] AS b "
          "ON a:kind = b:kind AND a:price < b:price"),
    "r": ("SELECT ISTREAM a:id AS a, b:id AS b FROM s [RANGE 3 TUPLES] AS b RIGHT OUTER JOIN s [RANGE 4 TUPLES] AS a "
          "ON a:kind = b:kind AND a:price < b:price"),
}


def test_join_streams_through_the_server_equal_the_kernel(local, tmp_path):
    expected = {name: run_query_detailed(q, {"s": ROWS}) for name, q in STREAMS.items()}
    assert all(e.outputs and not e.dropped for e in expected.values())
    assert any(row["b"] is None for row in expected["l"].outputs)  # some left rows go unmatched
    got = streams_into_files(local, tmp_path, ROWS, STREAMS, {n: len(e.outputs) for n, e in expected.items()})
    assert got["j"] == got["c"] == expected["j"].outputs == expected["c"].outputs
    assert got["l"] == got["r"] == expected["l"].outputs == expected["r"].outputs


@pytest.mark.parametrize(("statement", "caret", "reason"), [
    ("SELECT RSTREAM * FROM s [RANGE 1 TUPLES] AS a\n  FULL JOIN s [RANGE 1 TUPLES] AS b ON a:id = b:id;", 3,
     ("FULL JOIN is not supported: sbpy has inner, LEFT and RIGHT joins of windows; "
      "write a LEFT JOIN and a RIGHT JOIN as two SELECTs (UNION ALL)")),
    ("SELECT RSTREAM * FROM s [RANGE 1 TUPLES] AS a\n  JOIN s [RANGE 1 TUPLES] AS b;", 3,
     "JOIN needs a condition: ON <condition> or USING (<field>, ...) (CROSS JOIN for the cross product)"),
    ("SELECT RSTREAM * FROM s [RANGE 1 TUPLES] AS a\n  JOIN s [RANGE 1 TUPLES] AS b ON x:id = b:id;", 35,
     "ON refers to 'x', which is not joined here (joined: 'a', 'b')"),
])
def test_bad_joins_answer_e0006_with_a_caret(local, statement, caret, reason):
    r = post(local, statement)
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "E0006"
    lines = err["meta"]["parse_errors"]
    assert lines[0] == f"statement has a syntax error near line 2, symbol {caret}:"
    assert lines[1:4] == [statement.split("\n")[1], " " * (caret - 1) + "^", reason]


def test_explain_names_the_left_join_kernel(local, tmp_path):
    empty_source(local, tmp_path)
    plan = post(local, "EXPLAIN SELECT RSTREAM a:id FROM s [RANGE 2 TUPLES] AS a LEFT JOIN s [RANGE 1 TUPLES] AS b "
                       "ON a:kind = b:kind;").json()["plan"]
    assert plan["execution"] != "stateless" and "LEFT JOIN kernel" in plan["text"]
