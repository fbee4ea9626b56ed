"""A restarted server answers REST at once while its topologies are restored in the background (no Spark:
the local query runner, held by a gate): ``/runtime_status`` and the topology list answer, the restored
topology's stream and sink show ``starting`` until their query runs, then ``running``; the manager makes
anything that changes a topology being restored wait for it."""
from __future__ import annotations

import threading

import pytest
from local_runner import start_local
from sbpy.server.config import config_from_dict
from sbpy.server.manager import TopologyExistsError, TopologyManager
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology
from server_harness import start_server
from topology_util import lines, write


class Gate:
    """A query starter that waits for ``open`` before starting the local query (``entered``: it waits)."""

    def __init__(self):
        self.open, self.entered = threading.Event(), threading.Event()
        self.open.set()

    def factory(self, name, ctx):
        def starter(**spec):
            if not self.open.is_set():
                self.entered.set()
                self.open.wait()
            return start_local(**spec)

        return Topology(name, ctx, query_starter=starter)


def _states(client, topology):
    return {kind: [(n["name"], n["state"]) for n in client.get(f"/topologies/{topology}/{kind}s").json()[f"{kind}s"]]
            for kind in ("stream", "sink")}


def test_api_answers_while_topologies_restore(tmp_path):
    src, out, data = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "data"
    write(src, [{"a": i} for i in range(3)])
    cfg = config_from_dict({}, tmp_path / "sensorbee.yaml")
    gate = Gate()
    srv = start_server(cfg, data, gate.factory)
    try:
        with srv.client() as c:
            assert c.post("/topologies", json={"name": "keep"}).status_code == 200
            r = c.post("/topologies/keep/queries", json={"queries": f"""
                CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
                CREATE STREAM st AS SELECT RSTREAM a FROM s [RANGE 1 TUPLES];
                CREATE SINK k TYPE file WITH path = "{out}";
                INSERT INTO k FROM st;"""})
            assert r.status_code == 200, r.text
    finally:
        srv.stop()

    gate.open.clear()  # the restore will wait inside the query start of 'keep'
    srv = start_server(cfg, data, gate.factory, wait_restored=False)
    try:
        restore = srv.app.state.restore
        with srv.client() as c:
            assert gate.entered.wait(60)
            assert not restore.done.is_set()
            r = c.get("/runtime_status")
            assert r.status_code == 200 and r.json()["pid"] > 0
            assert c.get("/topologies").json() == {"topologies": [{"name": "keep"}]}
            assert _states(c, "keep") == {"stream": [("st", "starting")], "sink": [("k", "starting")]}
            gate.open.set()
            assert restore.done.wait(60)
            assert _states(c, "keep") == {"stream": [("st", "running")], "sink": [("k", "running")]}
            r = c.post("/topologies/keep/queries", json={"queries": "RESUME SOURCE s;"})
            assert r.status_code == 200, r.text
            assert wait_until(lambda: len(lines(out)) == 3, 30, 0.02)
    finally:
        srv.stop()
    assert lines(out) == [{"a": i} for i in range(3)]


def test_statements_wait_for_the_restore_of_their_topology(tmp_path):
    m = TopologyManager(None, lambda name, ctx: Topology(name, ctx))
    m.expect(["a"], threading.current_thread())  # this thread restores 'a'
    calling, results = threading.Event(), []

    def other_client():
        calling.set()
        try:
            m.create("a")
            results.append("created")
        except TopologyExistsError:
            results.append("exists")

    client = threading.Thread(target=other_client)
    client.start()
    assert calling.wait(10)
    assert m.names() == ["a"] and m.list() == []  # listed before it is created
    restored = m.create("a")  # the restoring thread is not held back
    assert m.get("a") is restored and m.restoring == ["a"]
    m.restored("a")
    client.join(30)
    assert results == ["exists"] and m.restoring == []
    m.stop_all()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # uvicorn's exit
def test_config_errors_still_abort_startup(tmp_path):
    (tmp_path / "t.bql").write_text("CREATE SOURCE from TYPE dummy;\n")
    cfg = config_from_dict({"topologies": {"t": {"bql_file": "t.bql"}}}, tmp_path / "sb.yaml")
    with pytest.raises(RuntimeError, match="failed to start"):
        start_server(cfg, tmp_path / "data")
