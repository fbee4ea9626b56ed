"""``GET /metrics`` (issue 13): node counters and query state read live from the topologies, REST request
counts and latencies, the bearer-token rule, and text both Prometheus parsers accept. Topologies run on
the Spark-free local runner; the numbers are checked against the REST node status (the same counters)
and against what the input data implies."""
from __future__ import annotations

import json

import httpx
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families
from rest_util import local_server, post_ok, status
from sbpy.server.metrics import journal_position
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.request_metrics import UNMATCHED, RouteTable

N = 60


def scrape(server, **headers: str) -> dict[tuple[str, frozenset], float]:
    """``{(sample name, labels): value}`` of one scrape, parsed by ``prometheus_client``'s parser."""
    r = httpx.get(server.url + "metrics", headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def node(samples: dict, name: str, kind: str, node_name: str, **extra: str) -> float | None:
    return value(samples, name, topology="t", node=node_name, kind=kind, **extra)


@pytest.fixture
def local(server_factory, tmp_path):
    """A server whose topologies run their queries on the local runner, files allowed under tmp_path."""
    with local_server(server_factory, tmp_path) as (srv, c):
        yield srv, c


# ---------------------------------------------------------------- node counters


def test_node_counters_move_with_the_tuples(local, tmp_path):
    srv, c = local
    rows = [{"a": i, "z": i % 4} for i in range(N)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    post_ok(c, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";
                CREATE STREAM x AS SELECT RSTREAM a, 12 / z AS q FROM s [RANGE 1 TUPLES] WHERE a % 3 = 0;
                CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
                INSERT INTO k FROM x;""")
    before = scrape(srv)
    assert node(before, "sbpy_node_tuples_out_total", "source", "s") == 0
    assert node(before, "sbpy_node_tuples_in_total", "stream", "x") == 0
    assert node(before, "sbpy_node_tuples_in_total", "sink", "k") == 0
    assert node(before, "sbpy_node_state", "source", "s", state="paused") == 1
    assert node(before, "sbpy_node_state", "source", "s", state="running") == 0
    assert node(before, "sbpy_node_input_buffer_size", "stream", "x", input="s") == 1024

    post_ok(c, "RESUME SOURCE s;")
    passed = [r for r in rows if r["a"] % 3 == 0]
    failed = [r for r in passed if r["z"] == 0]  # 12 / 0: the tuple is dropped with an error
    assert wait_until(lambda: status(c, "sink", "k")["input_stats"]["num_received_total"]
                      == len(passed) - len(failed), 30)
    after = scrape(srv)
    src, box, sink = status(c, "source", "s"), status(c, "stream", "x"), status(c, "sink", "k")
    assert node(after, "sbpy_node_tuples_out_total", "source", "s") == src["output_stats"]["num_sent_total"] == N
    assert node(after, "sbpy_node_tuples_in_total", "stream", "x") == box["input_stats"]["num_received_total"] == N
    assert node(after, "sbpy_node_input_tuples_total", "stream", "x", input="s") == N
    assert node(after, "sbpy_node_errors_total", "stream", "x") == box["input_stats"]["num_errors"] == len(failed)
    assert node(after, "sbpy_node_tuples_out_total", "stream", "x") == len(passed) - len(failed)
    assert node(after, "sbpy_node_tuples_in_total", "sink", "k") == len(passed) - len(failed)
    assert node(after, "sbpy_node_input_tuples_total", "sink", "k", input="x") == len(passed) - len(failed)
    assert node(after, "sbpy_node_errors_total", "sink", "k") == sink["input_stats"]["num_errors"] == 0
    assert node(after, "sbpy_node_tuples_dropped_total", "source", "s") == 0
    assert wait_until(lambda: status(c, "source", "s")["state"] == "stopped", 10)
    states = scrape(srv)
    assert [st for st in ("initialized", "starting", "running", "paused", "stopping", "stopped")
            if node(states, "sbpy_node_state", "source", "s", state=st) == 1] == ["stopped"]


def test_buffer_drops_are_counted_on_the_sender(local, tmp_path):
    srv, c = local
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(N)))
    post_ok(c, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";
                CREATE STREAM x AS SELECT RSTREAM a FROM s [RANGE 1 TUPLES, BUFFER SIZE 2, DROP OLDEST IF FULL];
                CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
                INSERT INTO k FROM x;
                RESUME SOURCE s;""")
    assert wait_until(lambda: status(c, "stream", "x")["state"] == "stopped", 30)
    samples = scrape(srv)
    dropped = status(c, "source", "s")["output_stats"]["num_dropped"]
    received = node(samples, "sbpy_node_tuples_in_total", "stream", "x")
    assert node(samples, "sbpy_node_tuples_dropped_total", "source", "s") == dropped
    assert received + dropped == N  # every tuple either reached the stream or was counted as dropped
    assert node(samples, "sbpy_node_input_buffer_size", "stream", "x", input="s") == 2


def test_query_metrics_follow_the_consumer(local, tmp_path):
    srv, c = local
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"a": i}) + "\n" for i in range(N)))
    post_ok(c, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";
                CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
                INSERT INTO k FROM s;""")
    labels = {"topology": "t", "query": "k", "kind": "sink"}
    before = scrape(srv)
    assert value(before, "sbpy_query_running", **labels) == 1
    assert value(before, "sbpy_query_restarts_total", **labels) == 0
    assert value(before, "sbpy_query_last_batch_id", **labels) is None  # no batch handled yet
    post_ok(c, "RESUME SOURCE s;")
    assert wait_until(lambda: status(c, "sink", "k")["input_stats"]["num_received_total"] == N, 30)
    after = scrape(srv)
    assert value(after, "sbpy_query_last_batch_id", **labels) >= 0
    topology = srv.app.state.manager.get("t")
    assert value(after, "sbpy_query_last_batch_id", **labels) == topology.consumers["k"].last_batch
    # Spark's progress figures exist only for queries on Spark, not for the local runner
    assert value(after, "sbpy_query_last_batch_duration_seconds", **labels) is None


def test_journal_position_reads_the_journal_source_offset():
    assert journal_position({"sources": [{"endOffset": '{"seq":42}'}]}) == 42
    assert journal_position({"sources": [{"endOffset": {"seq": 7}}]}) == 7
    assert journal_position({"sources": [{"endOffset": "not json"}]}) is None
    assert journal_position({"sources": []}) is None


# ---------------------------------------------------------------- REST requests


def test_request_counts_and_latencies_move(server):
    base = scrape(server)
    with server.client() as c:
        for _ in range(3):
            assert c.get("/topologies").status_code == 200
        assert c.get("/topologies/nope/sources").status_code == 404
        assert c.get("/no/such/path").status_code == 404
    after = scrape(server)

    def delta(name: str, **labels: str) -> float:
        return (value(after, name, **labels) or 0) - (value(base, name, **labels) or 0)

    listing = {"method": "GET", "route": "/api/v1/topologies", "status": "200"}
    assert delta("sbpy_http_requests_total", **listing) == 3
    assert delta("sbpy_http_request_duration_seconds_count", **listing) == 3
    assert delta("sbpy_http_request_duration_seconds_bucket", **listing, le="+Inf") == 3
    assert value(after, "sbpy_http_request_duration_seconds_sum", **listing) > 0
    missing = {"method": "GET", "route": "/api/v1/topologies/{topology_name}/sources", "status": "404"}
    assert delta("sbpy_http_requests_total", **missing) == 1
    assert delta("sbpy_http_requests_total", method="GET", route=UNMATCHED, status="404") == 1
    # the first scrape itself was counted before the second one was rendered
    assert value(after, "sbpy_http_requests_total", method="GET", route="/metrics", status="200") >= 1


def test_refused_requests_are_counted_with_their_route(server_factory):
    srv = server_factory({"network": {"auth_token": "s3cret"}})
    assert httpx.get(srv.api + "/topologies").status_code == 401
    samples = scrape(srv, Authorization="Bearer s3cret")
    assert value(samples, "sbpy_http_requests_total", method="GET", route="/api/v1/topologies", status="401") == 1


def test_route_table_maps_paths_to_templates():
    table = RouteTable(["/api/v1/topologies", "/api/v1/topologies/{topology_name}/sources/{name}"],
                       mounts=["/docs/assets"])
    assert table.template("/api/v1/topologies") == "/api/v1/topologies"
    assert table.template("/api/v1/topologies/t1/sources/s") == "/api/v1/topologies/{topology_name}/sources/{name}"
    assert table.template("/docs/assets/swagger-ui.css") == "/docs/assets"
    assert table.template("/api/v1/topologies/t1") == UNMATCHED
    assert table.template("/api/v1/topologies/t1/sources/s/extra") == UNMATCHED


# ---------------------------------------------------------------- auth and formats


def test_metrics_need_the_token_when_one_is_set(server_factory):
    srv = server_factory({"network": {"auth_token": "s3cret"}})
    r = httpx.get(srv.url + "metrics")
    assert r.status_code == 401 and r.json()["error"]["code"] == "J0005"
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert httpx.get(srv.url + "metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert "sbpy_http_requests_total" in httpx.get(srv.url + "metrics",
                                                   headers={"Authorization": "Bearer s3cret"}).text


def test_public_metrics_answer_without_the_token(server_factory):
    srv = server_factory({"network": {"auth_token": "s3cret", "public_metrics": True}})
    assert httpx.get(srv.url + "metrics").status_code == 200
    assert httpx.get(srv.api + "/topologies").status_code == 401  # the API itself stays protected


def test_openmetrics_when_asked_for(local):
    srv, _ = local
    r = httpx.get(srv.url + "metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/openmetrics-text")
    names = {f.name for f in parse_openmetrics(r.text)}
    assert {"sbpy_node_tuples_in", "sbpy_node_state", "sbpy_http_requests",
            "sbpy_http_request_duration_seconds"} <= names


def test_every_family_has_help_and_type(local, tmp_path):
    srv, c = local
    post_ok(c, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";')
    text = httpx.get(srv.url + "metrics").text
    families = list(text_string_to_metric_families(text))
    ours = [f for f in families if f.name.startswith("sbpy_")]
    assert ours and all(f.documentation and f.type in ("counter", "gauge", "histogram") for f in ours)
    assert any(f.name.startswith("process_") for f in families)
