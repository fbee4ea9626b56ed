"""``table(source)`` through the REST API on the Spark-free local runner (docs/timeplus.md, "table()"):
table queries answer their whole result on the SELECT cursor and end; a stream joining ``table(h)``
writes to its sink exactly what the in-process kernel gives with the same history; the history is the
source's last ``n`` tuples also after the journal was rolled and pruned; the statement errors."""
from __future__ import annotations

import json

import pytest
from rest_util import local_server, post, post_ok, streams_into_files
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.history import bind_tables
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import CLOCK_START, json_ready, parse_select
from sbpy.server.cli.client import iter_multipart
from sbpy.server.nodes.source_node import wait_until

JSON = {"content-type": "application/json"}
HISTORY = [{"k": i % 4, "v": i, "name": f"n{i}"} for i in range(30)]
KEEP = 12


@pytest.fixture
def local(server_factory, tmp_path, monkeypatch):
    """A local-runner server whose journal files roll every few hundred bytes (so pruning has files to
    delete), with source ``h`` (history = KEEP) that has emitted all of HISTORY."""
    monkeypatch.setenv("SBPY_JOURNAL_ROLL_BYTES", "300")
    with local_server(server_factory, tmp_path) as (srv, c):
        (tmp_path / "h.jsonl").write_text("".join(json.dumps(r) + "\n" for r in HISTORY))
        post_ok(c, f'CREATE SOURCE h TYPE file WITH path = "{tmp_path}/h.jsonl", history = {KEEP};')
        assert wait_until(lambda: c.get("/topologies/t/sources/h").json()["source"]["state"] == "stopped", 30)
        yield srv, c


def tuples(rows: list, name: str) -> list[Tuple]:
    return [Tuple(dict(r), CLOCK_START, i + 1, name) for i, r in enumerate(rows)]


def join_outputs(query: str, table: list, stream: list) -> list:
    """The in-process kernel's outputs of ``query`` over ``stream`` (input ``s``) with ``table(h)``."""
    proc = build_processor(bind_tables(parse_select(query), lambda n: tuples(table, n)))
    out = []
    for tup in tuples(stream, "s"):
        out += [json_ready(t.data) for t in proc.process(tup).outputs]
    return out


def select(c, query: str) -> list:
    with c.stream("POST", "/topologies/t/queries", json={"queries": query}) as r:
        assert r.status_code == 200, r.read()
        boundary = r.headers["content-type"].split("boundary=")[1].strip('"')
        return list(iter_multipart(r.iter_raw(), boundary))


def in_process(query: str) -> list:
    proc = build_processor(bind_tables(parse_select(query), lambda n: tuples(HISTORY[-KEEP:], n)))
    return [json_ready(t.data) for t in proc.run().outputs]


TABLE_QUERIES = [
    "SELECT count() AS n, min(v) AS lo, max(v) AS hi FROM table(h)",
    "SELECT k, count() AS n, sum(v) AS s FROM table(h) GROUP BY k ORDER BY k",
    "SELECT * FROM table(h) ORDER BY v DESC LIMIT 3 OFFSET 1",
    "SELECT RSTREAM name FROM table(h) WHERE v % 5 = 0",
    "SELECT RSTREAM a:v AS a, b:v AS b FROM table(h) AS a JOIN table(h) AS b ON a:v + 1 = b:v AND a:k = 1",
]


@pytest.mark.parametrize("query", TABLE_QUERIES)
def test_table_queries_answer_once_and_end(local, query):
    _, c = local
    got = select(c, query + ";")
    assert got == in_process(query) and got


def test_goldens(local):
    _, c = local
    assert select(c, "SELECT count() FROM table(h);") == [{"count": KEEP}]
    assert select(c, "SELECT v FROM table(h) ORDER BY v LIMIT 2;") == [{"v": 18}, {"v": 19}]


def test_the_history_survives_pruning(local, tmp_path):
    """Tuples posted one commit at a time roll the log of ``hh`` into many files; commits of another
    source run the pruner until it has deleted some: ``table(hh)`` is still its last 5 tuples."""
    _, c = local
    post_ok(c, "CREATE SOURCE hh TYPE http WITH history = 5; CREATE SOURCE other TYPE http;")
    for i in range(40):
        assert c.post("/topologies/t/sources/hh/tuples", content=json.dumps({"v": i}), headers=JSON).status_code == 200
    node_dir = next(tmp_path.rglob("journal/hh"))

    def pruned() -> bool:
        c.post("/topologies/t/sources/other/tuples", content=json.dumps({"x": 1}), headers=JSON)
        return (node_dir / "pruned.json").exists()

    assert wait_until(pruned, 30)
    assert select(c, "SELECT RSTREAM v FROM table(hh);") == [{"v": v} for v in range(35, 40)]


def test_stream_table_joins_equal_the_kernel(local, tmp_path):
    _, c = local
    rows = [{"id": i, "k": (i * 3) % 5} for i in range(15)]
    queries = {
        "j": "SELECT ISTREAM s:id AS id, h:v AS v FROM s [RANGE 2 TUPLES] JOIN table(h) ON s:k = h:k",
        "tail": "SELECT s:id AS id, h:name AS name FROM s JOIN table(h) ON s:k = h:k WHERE h:v > 25",
        "left": "SELECT RSTREAM s:id AS id, h:v AS v FROM s [RANGE 1 TUPLES] LEFT JOIN table(h) ON s:k = h:k",
    }
    expected = {name: join_outputs(q, HISTORY[-KEEP:], rows) for name, q in queries.items()}
    assert all(expected.values())
    got = streams_into_files(c, tmp_path, rows, queries, {n: len(e) for n, e in expected.items()})
    assert got == expected


@pytest.mark.parametrize(("statement", "message"), [
    ("SELECT count() FROM table(nowhere);", "stream 'nowhere' was not found"),
    ("SELECT count() FROM table(plain);", "source 'plain' keeps no history for table(): create it WITH history = n"),
    ("CREATE STREAM z AS SELECT count() AS n FROM table(h);",
     "stream 'z' cannot be defined over table() alone: a query over table() is bounded"),
    ("SELECT RSTREAM * FROM p [RANGE 1 TUPLES] JOIN table(x1) ON p:a = x1:a;",
     "table() reads a source's history; stream 'x1' keeps none"),
    ('CREATE SOURCE bad TYPE file WITH path = "in.jsonl", history = -1;',
     "the 'history' parameter of source 'bad' must be a non-negative integer"),
    ('CREATE SOURCE bad TYPE file WITH path = "in.jsonl", history = "all";',
     "the 'history' parameter of source 'bad' must be a non-negative integer"),
])
def test_statement_errors(local, tmp_path, statement, message):
    _, c = local
    (tmp_path / "in.jsonl").write_text("")
    post_ok(c, f'CREATE PAUSED SOURCE plain TYPE file WITH path = "{tmp_path}/in.jsonl";'
               f'CREATE PAUSED SOURCE p TYPE file WITH path = "{tmp_path}/in.jsonl";'
               "CREATE STREAM x1 AS SELECT RSTREAM * FROM p [RANGE 1 TUPLES];")
    r = post(c, statement.replace('"in.jsonl"', f'"{tmp_path}/in.jsonl"'))
    assert r.status_code == 400 and message in r.text, r.text


def test_explain_and_the_event_stream(local):
    srv, c = local
    plan = post(c, "EXPLAIN SELECT count() FROM table(h);").json()["plan"]
    assert plan["execution"] == "table" and plan["inputs"] == [] and "history of h" in plan["reason"]
    query = "SELECT RSTREAM v FROM table(h) WHERE v > 25;"
    with srv.client() as cc, cc.stream("GET", "/topologies/t/select", params={"q": query}) as r:
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == "event: end" or lines[-2] == "event: end"  # the query ended
    data = [json.loads(line[6:]) for k, line in enumerate(lines)
            if line.startswith("data: ") and (k == 0 or not lines[k - 1].startswith("event: "))]
    assert data == select(c, query) == [{"v": v} for v in range(26, 30)]
