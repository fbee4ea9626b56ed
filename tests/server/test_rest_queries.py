"""REST: POST /topologies/{t}/queries — EVAL, errors E0006/E0007, SELECT multipart streaming,
node endpoints (with a fake topology: no Spark)."""
from __future__ import annotations

import threading
from typing import Any

import pytest

from sbpy.bql.errors import BQLExecutionError
from sbpy.server.cli.client import iter_multipart
from sbpy.server.topology import Topology


def post(client, topology: str, queries: Any):
    return client.post(f"/topologies/{topology}/queries", json={"queries": queries})


@pytest.fixture
def c(server):
    with server.client() as client:
        client.post("/topologies", json={"name": "t"})
        yield client


def test_eval_keeps_ints_and_floats(c):
    assert post(c, "t", "EVAL 1 + 1;").json() == {"result": 2}
    r = post(c, "t", "EVAL 1.0 + 1;")
    assert r.text == '{"result":2.0}'
    assert post(c, "t", 'EVAL "a" || "b"').json() == {"result": "ab"}
    assert post(c, "t", "EVAL x ON {\"x\": [1, 2.5]};").json() == {"result": [1, 2.5]}


def test_empty_queries(c):
    assert post(c, "t", "").json() == {"topology_name": "t", "status": "running", "queries": []}


def test_queries_field_validation(c):
    r = c.post("/topologies/t/queries", json={})
    assert r.status_code == 400 and r.json()["error"]["message"] == "'queries' field is missing"
    r = post(c, "t", 42)
    assert r.json()["error"]["message"] == "'queries' field must be a string"
    assert r.json()["error"]["code"] == "E0005"
    assert post(c, "nope", "EVAL 1;").status_code == 404


def test_parse_error_envelope(c):
    r = post(c, "t", "EVAL 1;\nEVAL 1 +;\nEVAL 3;")
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "E0006" and err["message"] == "Cannot parse a BQL statement"
    assert err["meta"]["statement"] == "EVAL 1 +;\nEVAL 3;"
    lines = err["meta"]["parse_errors"]
    assert isinstance(lines, list) and len(lines) > 1
    assert any("line 2" in line for line in lines)
    assert "EVAL 1 +;" in lines and any(line.strip() == "^" for line in lines)


def test_parse_error_rest_skips_semicolons_in_strings(c):
    r = post(c, "t", 'EVAL "a;b";\nEVAL ) ;')
    assert r.json()["error"]["meta"]["statement"] == "EVAL ) ;"


def test_select_or_eval_must_be_alone(c):
    r = post(c, "t", "EVAL 1; EVAL 2;")
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "E0007"
    assert err["meta"]["error"] == "a SELECT or EVAL statement cannot be issued with other statements"
    assert err["meta"]["statement"] == "EVAL 1"


def test_analysis_error_has_snippet(c):
    r = post(c, "t", "CREATE SOURCE select TYPE dummy;")
    err = r.json()["error"]
    assert err["code"] == "E0007" and "reserved word" in err["meta"]["error"]
    assert err["meta"]["statement"] == "CREATE SOURCE select TYPE dummy"
    assert err["meta"]["snippet"][0] == "CREATE SOURCE select TYPE dummy;"


def test_eval_error_is_e0007(c):
    r = post(c, "t", "EVAL 1 / 0;")
    assert r.status_code == 400 and r.json()["error"]["code"] == "E0007"


def test_update_source_and_sink_over_rest(c):
    assert post(c, "t", 'CREATE PAUSED SOURCE src TYPE node_statuses WITH interval = "1h";'
                        'CREATE SINK snk TYPE stdout;').status_code == 200
    assert post(c, "t", 'UPDATE SOURCE src SET interval = "2s";').status_code == 200
    r = post(c, "t", "UPDATE SOURCE src SET interval = 0;")
    assert r.status_code == 400 and "interval must be positive" in r.json()["error"]["meta"]["error"]
    r = post(c, "t", "UPDATE SINK snk SET x = 1;")
    assert r.status_code == 400 and r.json()["error"]["code"] == "E0007"
    assert r.json()["error"]["meta"]["error"] == "sink 'snk' cannot be updated"


# ---------------------------------------------------------------- a fake topology


class ListCursor:
    """Duck-typed SelectCursor: rows, then (``block``) waits until closed."""

    def __init__(self, rows, block: bool = False):
        self.rows, self.block = rows, block
        self.done = threading.Event()

    def __iter__(self):
        yield from self.rows
        if self.block:  # like a live query: no more tuples until closed
            self.done.wait(30)

    def close(self):
        self.done.set()


class FakeTopology(Topology):
    cursors: list[ListCursor] = []

    def __init__(self, name, context=None):
        super().__init__(name, context)
        self.applied: list[str] = []

    def execute(self, parsed):
        if type(parsed.stmt).__name__ == "Eval":
            return super().execute(parsed)
        if "fail" in parsed.text:
            raise BQLExecutionError("source 'fail' cannot be created")
        self.applied.append(parsed.text)
        return {}

    def select(self, parsed):
        cursor = ListCursor([{"a": 1}, {"b": 2.0, "s": "x"}], block="block" in parsed.text)
        FakeTopology.cursors.append(cursor)
        return cursor

    def list_nodes(self, kind):
        return [{"node_type": kind, "name": f"{kind}1", "state": "running"}]

    def node(self, kind, name):
        if name != f"{kind}1":
            raise BQLExecutionError("not found")
        return {"node_type": kind, "name": name, "state": "running", "status": {"x": 1}, "meta": None}


@pytest.fixture
def fake(server_factory):
    srv = server_factory(topology_factory=FakeTopology)
    with srv.client() as client:
        client.post("/topologies", json={"name": "f"})
        yield srv, client


def test_statements_run_in_order_and_stop_at_first_failure(fake):
    srv, c = fake
    r = post(c, "f", "CREATE SOURCE a TYPE dummy; CREATE SOURCE fail TYPE dummy; CREATE SOURCE b TYPE dummy;")
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["meta"] == {"error": "source 'fail' cannot be created",
                           "statement": "CREATE SOURCE fail TYPE dummy"}
    topology = srv.app.state.manager.get("f")
    assert topology.applied == ["CREATE SOURCE a TYPE dummy"]
    r = post(c, "f", "CREATE SOURCE b TYPE dummy;")
    assert r.json()["topology_name"] == "f" and r.json()["status"] == "running"


def test_select_streams_multipart(fake):
    _, c = fake
    with c.stream("POST", "/topologies/f/queries",
                  json={"queries": "SELECT RSTREAM * FROM s [RANGE 1 TUPLES];"}) as r:
        assert r.status_code == 200
        ctype = r.headers["content-type"]
        assert ctype.startswith("multipart/mixed; boundary=")
        boundary = ctype.split("boundary=")[1].strip('"')
        raw = r.read()
    assert raw.count(b"Content-Type: application/json\r\nContent-Length: ") == 2
    assert raw.endswith(f"--{boundary}--\r\n".encode())
    assert list(iter_multipart(iter([raw]), boundary)) == [{"a": 1}, {"b": 2.0, "s": "x"}]
    assert b'"b":2.0' in raw
    assert FakeTopology.cursors[-1].done.is_set()


def test_select_cursor_closed_when_client_leaves(fake):
    _, c = fake
    with c.stream("POST", "/topologies/f/queries",
                  json={"queries": "SELECT RSTREAM * FROM block [RANGE 1 TUPLES];"}) as r:
        rows = iter_multipart(r.iter_raw(), r.headers["content-type"].split("boundary=")[1].strip('"'))
        assert next(rows) == {"a": 1}
        cursor = FakeTopology.cursors[-1]
    assert cursor.done.wait(10)


def test_node_endpoints(fake):
    _, c = fake
    r = c.get("/topologies/f/streams").json()
    assert r == {"topology": "f", "count": 1,
                 "streams": [{"node_type": "box", "name": "stream1", "state": "running"}]}
    assert c.get("/topologies/f/sources").json()["sources"][0]["node_type"] == "source"
    r = c.get("/topologies/f/sinks/sink1").json()
    assert r == {"topology": "f", "sink": {"node_type": "sink", "name": "sink1", "state": "running",
                                           "status": {"x": 1}}}
    r = c.get("/topologies/f/sources/zzz")
    assert r.status_code == 404 and r.json()["error"]["message"] == "The source was not found"
    assert c.get("/topologies/nope/sources").status_code == 404


def test_explain_answers_the_plan_and_creates_nothing(c):
    assert post(c, "t", "CREATE PAUSED SOURCE src TYPE node_statuses;").status_code == 200
    r = post(c, "t", "EXPLAIN SELECT RSTREAM id FROM src [RANGE 1 TUPLES] WHERE id > 1;")
    plan = r.json()["plan"]
    assert r.status_code == 200 and plan["execution"] == "stateless"
    # a source that journals tuples, not file lines: the vectorized tier, and why (file lines: the next test)
    assert plan["stages"][0]["tier"] == "vectorized-python" and plan["stages"][0]["node"] == "(select)"
    assert "input 'src' journals tuples, not file lines" in plan["stages"][0]["tier_why"]
    assert plan["text"].startswith("execution: stateless")
    r = post(c, "t", "EXPLAIN SELECT RSTREAM sin(id) AS d FROM src [RANGE 1 TUPLES];")  # a function: Python
    stage = r.json()["plan"]["stages"][0]
    assert stage["tier"] == "vectorized-python" and "native tier not used: stage '(select)'" in stage["tier_why"]
    r = post(c, "t", "EXPLAIN CREATE STREAM w AS SELECT RSTREAM count(*) AS n FROM src [RANGE 5 SECONDS];")
    assert r.json()["plan"]["execution"] == "sequential" and r.json()["plan"]["stages"][0]["node"] == "w"
    assert c.get("/topologies/t/streams").json()["streams"] == []  # nothing was created
    r = post(c, "t", "EXPLAIN SELECT RSTREAM id FROM nowhere [RANGE 1 TUPLES];")
    assert r.status_code == 400 and "'nowhere' was not found" in r.json()["error"]["meta"]["error"]


def test_explain_native_tier_only_over_file_lines(server_factory, tmp_path):
    """The native tier reads file lines: a ``file`` source read in segments gets it, one paced by an
    ``interval`` (which journals one tuple at a time) does not, and EXPLAIN says why."""
    from rest_util import local_server

    from sbpy.bql.spark.native_udf import status

    (tmp_path / "in.jsonl").write_text("")
    with local_server(server_factory, tmp_path) as (_, c):
        r = post(c, "t", f'CREATE PAUSED SOURCE f TYPE file WITH path = "{tmp_path / "in.jsonl"}";')
        assert r.status_code == 200, r.text
        plan = post(c, "t", "EXPLAIN SELECT RSTREAM id FROM f [RANGE 1 TUPLES] WHERE id > 1;").json()["plan"]
        if status()[0]:  # a JDK with javac: the native tier (else: vectorized, and why)
            assert plan["stages"][0]["tier"] == "native-jvm" and plan["stages"][0]["node"] == "(select)"
            assert plan["stages"][0]["runs_on"] == "JVM" and "compiles to Spark" in plan["stages"][0]["tier_why"]
        else:
            assert plan["stages"][0]["tier"] == "vectorized-python" and status()[1] in plan["stages"][0]["tier_why"]
        ticked = f'CREATE PAUSED SOURCE g TYPE file WITH path = "{tmp_path / "in.jsonl"}", interval = 0.5;'
        assert post(c, "t", ticked).status_code == 200
        plan = post(c, "t", "EXPLAIN SELECT RSTREAM id FROM g [RANGE 1 TUPLES] WHERE id > 1;").json()["plan"]
        assert plan["stages"][0]["tier"] == "vectorized-python"
        assert "input 'g' journals tuples, not file lines" in plan["stages"][0]["tier_why"]
