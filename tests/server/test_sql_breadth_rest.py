"""SQL beyond SensorBee through the REST API (docs/sql-breadth.md): IN / LIKE / BETWEEN in EVAL and in a
running stream, DISTINCT and ORDER BY ... LIMIT (top-N) streams written to a file sink, syntax and
analysis errors with their positions, and EXPLAIN. Topologies run on the Spark-free local runner; each
stream's sink file must hold exactly what the in-process kernel gives for the same query and input."""
from __future__ import annotations

import json

import pytest
from rest_util import empty_source, local_server, post, received, streams_into_files
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.parser import parse_expression
from sbpy.bql.runtime.testing import run_query_detailed
from sbpy.server.nodes.source_node import wait_until

ROWS = [{"id": i, "kind": ("bid", "ask", "sell")[i % 3], "price": (i * 7) % 23,
         "name": ("alpha", "beta", "al%", "gamma")[i % 4]} for i in range(40)]


@pytest.fixture
def local(server_factory, tmp_path):
    """A client of a local-runner server with topology ``t`` (rest_util.local_server)."""
    with local_server(server_factory, tmp_path) as (_, c):
        yield c


@pytest.mark.parametrize("expr", [
    '2 IN (1, 2.0)', '1 NOT IN (2, NULL)', '"alpha" LIKE "al%"', '"10%" LIKE "10!%" ESCAPE "!"',
    '5 BETWEEN 1 AND 9', '5 NOT BETWEEN NULL AND 2', 'x IN (1, 2) ON {"x": 2}',
])
def test_eval_answers_what_the_evaluator_gives(local, expr):
    text, _, on = expr.partition(" ON ")
    expected = evaluate_constant(parse_expression(text), on=parse_expression(on) if on else None)
    r = post(local, f"EVAL {expr};")
    assert r.status_code == 200 and r.json() == {"result": expected}


def test_eval_errors_are_e0007(local):
    r = post(local, "EVAL 1 LIKE \"1\";")
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "E0007"
    assert "cannot apply 'LIKE' to 'int' and 'string'" in err["meta"]["error"]


def test_syntax_error_points_at_the_token(local):
    r = post(local, "EVAL 1;\nEVAL x NOT = 1;")
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "E0006"
    lines = err["meta"]["parse_errors"]
    assert lines[0] == "statement has a syntax error near line 2, symbol 12:"
    assert lines[1:4] == ["EVAL x NOT = 1;", " " * 11 + "^",
                          "unexpected '=', expected 'BETWEEN', 'IN' or 'LIKE'"]


def test_order_by_of_an_unknown_column_is_refused(local, tmp_path):
    empty_source(local, tmp_path)
    r = post(local, "CREATE STREAM x AS SELECT RSTREAM id FROM s [RANGE 3 TUPLES] ORDER BY price LIMIT 1;")
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "E0007"
    assert err["meta"]["error"] == "ORDER BY refers to 'price', which is not an output column (columns: id)"


QUERIES = [
    ('SELECT RSTREAM id, price FROM s [RANGE 1 TUPLES] WHERE kind IN ("bid", "ask") AND price BETWEEN 5 AND 15 '
     'AND name NOT LIKE "%!%" ESCAPE "!"'),
    "SELECT ISTREAM DISTINCT kind, name FROM s [RANGE 6 TUPLES]",
    "SELECT RSTREAM id, price FROM s [RANGE 5 TUPLES] ORDER BY price DESC, id LIMIT 2",
    "SELECT ISTREAM kind, max(price) AS top FROM s [RANGE 9 TUPLES] GROUP BY kind ORDER BY top DESC LIMIT 1",
]


@pytest.mark.parametrize("query", QUERIES)
def test_stream_through_the_server_equals_the_kernel(local, tmp_path, query):
    expected = run_query_detailed(query, {"s": ROWS})
    assert not expected.dropped and expected.outputs
    got = streams_into_files(local, tmp_path, ROWS, {"x": query}, {"x": len(expected.outputs)})
    assert got["x"] == expected.outputs


def test_explain_keeps_distinct_off_the_stateless_tier(local, tmp_path):
    empty_source(local, tmp_path)
    plain = post(local, 'EXPLAIN SELECT RSTREAM id FROM s [RANGE 1 TUPLES] WHERE kind IN ("a");').json()["plan"]
    assert plain["execution"] == "stateless"
    shaped = post(local, "EXPLAIN SELECT RSTREAM DISTINCT id FROM s [RANGE 1 TUPLES];").json()["plan"]
    assert shaped["execution"] != "stateless"
    assert "DISTINCT / ORDER BY" in shaped["text"]


def test_cte_stream_equals_the_explicit_chain_of_streams(local, tmp_path):
    """``WITH i AS (inner) outer`` gives what ``CREATE STREAM i AS inner`` plus a stream reading ``i``
    gives in the same topology (the outer query reads the source too: the journal's order decides)."""
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    inner = "SELECT ISTREAM id, price FROM s [RANGE 3 TUPLES] WHERE price % 2 = 0"
    outer = "SELECT RSTREAM i:price AS ip, s:id AS sid FROM i [RANGE 2 TUPLES], s [RANGE 1 TUPLES]"
    cte = f"WITH i AS ({inner}) {outer}"
    expected = run_query_detailed(cte, {"s": ROWS})
    assert expected.outputs and not expected.dropped
    r = post(local, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";
                        CREATE STREAM i AS {inner};
                        CREATE STREAM by_streams AS {outer};
                        CREATE STREAM with_cte AS {cte};
                        CREATE SINK ka TYPE file WITH path = "{tmp_path}/chain.jsonl";
                        CREATE SINK kb TYPE file WITH path = "{tmp_path}/cte.jsonl";
                        INSERT INTO ka FROM by_streams;
                        INSERT INTO kb FROM with_cte;
                        RESUME SOURCE s;""")
    assert r.status_code == 200, r.text
    n = len(expected.outputs)
    assert wait_until(lambda: received(local, "ka") >= n and received(local, "kb") >= n, 60)
    assert post(local, "DROP SINK ka; DROP SINK kb;").status_code == 200
    chain = [json.loads(x) for x in (tmp_path / "chain.jsonl").read_text().splitlines()]
    with_cte = [json.loads(x) for x in (tmp_path / "cte.jsonl").read_text().splitlines()]
    assert with_cte == chain == expected.outputs


def test_stream_with_a_subquery_is_connected_to_the_inner_inputs(local, tmp_path):
    (tmp_path / "in.jsonl").write_text("")
    r = post(local, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";
                        CREATE STREAM x AS SELECT RSTREAM v FROM (SELECT RSTREAM price AS v FROM s [RANGE 1 TUPLES])
                            [RANGE 1 TUPLES] AS q;""")
    assert r.status_code == 200, r.text
    status = local.get("/topologies/t/streams/x").json()["stream"]["status"]
    assert list(status["input_stats"]["inputs"]) == ["s"]
    plan = post(local, "EXPLAIN SELECT RSTREAM v FROM (SELECT RSTREAM price AS v FROM s [RANGE 1 TUPLES]) "
                       "[RANGE 1 TUPLES] AS q;").json()["plan"]
    assert plan["execution"] != "stateless" and "subquery" in plan["text"]
