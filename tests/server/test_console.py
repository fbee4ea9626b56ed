"""The web console's HTTP side (issue 13, item 1): the page and its assets from the package (no CDN),
the ``/api/v1/console/`` snapshot, EXPLAIN and SSE feed on a running Spark-free topology, the bearer
token rule, and the feed's release of the topology when the client goes away. Counters are checked
against the REST node status and against what the input file implies."""
from __future__ import annotations

import re
from html.parser import HTMLParser

import httpx
import pytest
from console_util import console_events, create_demo, expected_counts, node_of, start_local_server
from sbpy.server.nodes.source_node import wait_until


@pytest.fixture
def local(server_factory, tmp_path):
    srv = start_local_server(server_factory, tmp_path)
    with srv.client() as c:
        yield srv, c


def rest_status(c: httpx.Client, kind: str, name: str) -> dict:
    return c.get(f"/topologies/t/{kind}s/{name}").json()[kind]["status"]


# ---------------------------------------------------------------- the page


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        for key, value in attrs:
            if key in ("src", "href") and value:
                self.refs.append(value)


def test_page_and_assets_come_from_this_server(server):
    page = httpx.get(server.url)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    parser = _Refs()
    parser.feed(page.text)
    assets = [r for r in parser.refs if r.startswith("console/assets/")]
    assert {a.rsplit("/", 1)[1] for a in assets} == {"console.js", "console.css"}
    for ref in parser.refs:
        assert not re.match(r"^(https?:)?//", ref), f"an outside reference: {ref}"
    for ref in assets:
        r = httpx.get(server.url + ref)
        assert r.status_code == 200 and r.content, ref
    for ref in ("docs", "metrics"):  # the page's links
        assert httpx.get(server.url + ref).status_code == 200
    script = httpx.get(server.url + "console/assets/console.js").text
    assert "innerHTML" not in script  # values are written with textContent only
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", script)


# ---------------------------------------------------------------- snapshot and explain


def test_snapshot_counts_what_the_file_implies(local, tmp_path):
    _srv, c = local
    create_demo(c, tmp_path, paused=True)  # resumed once the sink's query reads the journal
    assert c.post("/topologies/t/queries", json={"queries": "RESUME SOURCE s;"}).status_code == 200
    want = expected_counts()
    assert wait_until(lambda: rest_status(c, "sink", "k")["input_stats"]["num_received_total"]
                      == want["x_out"] and rest_status(c, "source", "s")["state"] == "stopped", 30)
    snap = c.get("/console/topologies/t").json()
    assert snap["topology"] == "t"
    assert [(n["kind"], n["name"]) for n in snap["nodes"]] == [
        ("source", "s"), ("stream", "x"), ("stream", "idle"), ("sink", "k")]
    s, x, idle, k = (node_of(snap, n) for n in ("s", "x", "idle", "k"))
    assert (s["type"], s["in"], s["out"], s["errors"]) == ("file", None, want["rows"], None)
    assert (x["in"], x["out"], x["errors"], x["inputs"]) == (want["rows"], want["x_out"], want["x_errors"], ["s"])
    assert (k["type"], k["in"], k["out"], k["dropped"], k["inputs"]) == ("file", want["x_out"], None, None, ["x"])
    assert idle["in"] == 0
    for node in snap["nodes"]:  # the same counters as the REST status
        status = rest_status(c, node["kind"], node["name"])
        assert node["state"] == status["state"]
        if "input_stats" in status:
            assert node["in"] == status["input_stats"]["num_received_total"]
            assert node["errors"] == status["input_stats"]["num_errors"]
        if "output_stats" in status:
            assert node["out"] == status["output_stats"]["num_sent_total"]
            assert node["dropped"] == status["output_stats"]["num_dropped"]
    assert {(e["sender"], e["receiver"]): e["received"] for e in snap["edges"]} == {
        ("s", "x"): want["rows"], ("s", "idle"): 0, ("x", "k"): want["x_out"]}
    (query,) = snap["queries"]
    assert (query["id"], query["kind"], query["nodes"], query["restarts"]) == ("k", "sink", ["x", "k"], 0)


def test_explain_of_a_running_and_an_idle_stream(local, tmp_path):
    _srv, c = local
    create_demo(c, tmp_path, paused=True)
    running = c.get("/console/topologies/t/streams/x/explain").json()
    assert (running["mode"], running["query"]) == ("running", "k")
    assert running["statement"] == ("CREATE STREAM x AS SELECT RSTREAM a, 12 / z AS q FROM s [RANGE 1 TUPLES] "
                                    "WHERE a % 3 = 0")
    assert "stage x [" in running["plan"] and "journal inputs: s" in running["plan"]
    idle = c.get("/console/topologies/t/streams/IDLE/explain").json()
    assert (idle["mode"], idle["query"]) == ("idle", None)
    # the plan BQL's EXPLAIN gives for the same statement (under another name, as idle exists), its
    # stage showing the SELECT the stream runs rather than the whole statement
    select = "SELECT RSTREAM * FROM s [RANGE 1 TUPLES]"
    assert idle["statement"] == f"CREATE STREAM idle AS {select}"
    r = c.post("/topologies/t/queries", json={"queries": f"EXPLAIN CREATE STREAM idle_copy AS {select}"})
    assert r.status_code == 200, r.text
    bql_plan = r.json()["plan"]["text"]
    assert f"  CREATE STREAM idle_copy AS {select}" in bql_plan.splitlines()
    assert idle["plan"] == bql_plan.replace(f"CREATE STREAM idle_copy AS {select}", select).replace(
        "idle_copy", "idle")
    missing = c.get("/console/topologies/t/streams/nope/explain")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "E0001"
    assert c.get("/console/topologies/none/streams/x/explain").status_code == 404


# ---------------------------------------------------------------- the live feed


def test_feed_counters_and_rates_move(local, tmp_path):
    srv, c = local
    create_demo(c, tmp_path, interval="20ms", repeat=-1)
    with console_events(srv.api, topology="t", interval=0.2) as feed:
        first = feed.until(lambda e: e.name == "topologies")
        assert first.data == {"topologies": [{"name": "t", "nodes": 4, "states": {"running": 4}}]}
        start = feed.until(lambda e: e.name == "topology")
        assert node_of(start.data, "s")["rates"] == {"in": None, "out": None, "dropped": None}
        later = feed.until(lambda e: e.name == "topology" and node_of(e.data, "x")["out"]
                           > node_of(start.data, "x")["out"] and (node_of(e.data, "s")["rates"]["out"] or 0) > 0)
        assert later.id > start.id
        x = node_of(later.data, "x")
        assert x["rates"]["in"] > 0 and x["rates"]["out"] > 0 and x["rates"]["dropped"] == 0
        assert node_of(later.data, "k")["rates"]["out"] is None  # a sink emits nothing
        assert node_of(later.data, "idle")["rates"]["in"] == 0


def test_feed_rates_follow_pause_and_resume(local, tmp_path):
    srv, c = local
    create_demo(c, tmp_path, paused=True, interval="10ms", repeat=-1)
    with console_events(srv.api, topology="t", interval=0.1) as feed:
        paused = feed.until(lambda e: e.name == "topology" and node_of(e.data, "s")["rates"]["out"] is not None)
        assert node_of(paused.data, "s")["rates"]["out"] == 0 and node_of(paused.data, "s")["state"] == "paused"
        assert c.post("/topologies/t/queries", json={"queries": "RESUME SOURCE s;"}).status_code == 200
        feed.until(lambda e: e.name == "topology" and node_of(e.data, "s")["state"] == "running"
                   and node_of(e.data, "s")["rates"]["out"] > 0)


def test_feed_reports_dropped_tuples_with_their_error(local, tmp_path):
    srv, c = local
    create_demo(c, tmp_path, paused=True)
    want = expected_counts()
    with console_events(srv.api, topology="t", interval=0.1) as feed:
        feed.until(lambda e: e.name == "topology")  # subscribed from here on
        assert c.post("/topologies/t/queries", json={"queries": "RESUME SOURCE s;"}).status_code == 200
        done = feed.until(lambda e: e.name == "topology" and e.data["drops_seen"] == want["x_errors"]
                          and node_of(e.data, "x")["errors"] == want["x_errors"])
    drops = done.data["recent_drops"]
    assert len(drops) == min(want["x_errors"], 20)
    assert {(d["node"], d["node_type"], d["error"]) for d in drops} == {("x", "box", "division by zero")}
    # the failed rows are the ones with a % 3 = 0 and z = 0, newest last
    failed = [a for a in range(want["rows"]) if a % 12 == 0]
    assert [d["data"] for d in drops] == [f'{{"a":{a},"z":0}}' for a in failed][-len(drops):]


def test_feed_without_or_with_a_missing_topology(local, tmp_path):
    srv, c = local
    with console_events(srv.api, interval=0.1) as feed:
        assert feed.next().data == {"topologies": []}
        create_demo(c, tmp_path, paused=True)
        feed.until(lambda e: e.data == {"topologies": [{"name": "t", "nodes": 4,
                                                       "states": {"paused": 1, "running": 3}}]})
    with console_events(srv.api, topology="other", interval=0.1) as feed:
        assert feed.next().name == "topologies"
        gone = feed.next()
        assert (gone.name, gone.data) == ("gone", {"topology": "other"})
        assert feed.next().name == "topologies"  # no second "gone"
        assert c.post("/topologies", json={"name": "other"}).status_code == 200
        feed.until(lambda e: e.name == "topology" and e.data["topology"] == "other")


def test_feed_releases_the_topology_when_the_client_goes_away(local, tmp_path):
    srv, c = local
    create_demo(c, tmp_path, paused=True)
    topology = srv.app.state.manager.get("t")
    with console_events(srv.api, topology="t", interval=0.1) as feed:
        feed.until(lambda e: e.name == "topology")
        assert len(topology._drop_listeners) == 1
    assert wait_until(lambda: not topology._drop_listeners, 10)


# ---------------------------------------------------------------- the bearer token


def test_console_data_needs_the_token_and_the_page_does_not(server_factory, tmp_path):
    srv = start_local_server(server_factory, tmp_path, auth_token="s3cret")
    assert httpx.get(srv.url).status_code == 200
    assert httpx.get(srv.url + "console/assets/console.js").status_code == 200
    for path in ("/console/events", "/console/topologies/t"):
        r = httpx.get(srv.api + path)
        assert r.status_code == 401 and r.json()["error"]["code"] == "J0005"
    auth = {"Authorization": "Bearer s3cret"}
    with console_events(srv.api, headers=auth, interval=0.1) as feed:
        assert feed.next().data == {"topologies": []}
