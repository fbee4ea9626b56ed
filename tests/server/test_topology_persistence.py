"""Persistence: statements are recorded and a restored topology resumes without duplicates."""
from __future__ import annotations

import json

from local_runner import start_local

from sbpy.server import persistence
from sbpy.server.manager import TopologyManager
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology


class Ctx:
    def __init__(self, d):
        self.data_dir = d


def factory(name, ctx):
    return Topology(name, ctx, query_starter=start_local)


def test_restore_replays_statements_and_resumes(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(3)))
    ctx = Ctx(tmp_path / "data")
    m = TopologyManager(ctx, topology_factory=factory)
    persistence.install(m)
    t = m.create("p1")
    m.run_script(t, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM s; RESUME SOURCE s;""")
    assert wait_until(lambda: t.node("sink", "k")["status"]["input_stats"]["num_received_total"] == 3, 5)
    m.stop_all()
    text = (tmp_path / "data/topologies/p1/statements.bql").read_text()
    assert text.count(";\n") == 4 and "RESUME SOURCE s" in text

    m2 = TopologyManager(ctx, topology_factory=factory)
    persistence.install(m2)
    assert persistence.restore(m2) == ["p1"]
    t2 = m2.get("p1")
    assert t2.node("source", "s")["state"] == "stopped"  # it had ended: not read again
    m2.delete("p1")
    assert [json.loads(x) for x in out.read_text().splitlines()] == [{"a": 0}, {"a": 1}, {"a": 2}]
    assert not (tmp_path / "data/topologies/p1").exists()


def test_config_topology_wins(tmp_path):
    ctx = Ctx(tmp_path / "data")
    m = TopologyManager(ctx, topology_factory=factory)
    persistence.install(m)
    m.run_script(m.create("c1"), "CREATE SINK k TYPE stdout;")
    m.stop_all()

    class Cfg:
        topologies = {"c1": None}

    m2 = TopologyManager(ctx, topology_factory=factory)
    persistence.install(m2)
    assert persistence.restore(m2, Cfg()) == []


def test_a_drop_releases_the_folder_before_removing_it(tmp_path):
    """``release`` (the server's ``ServerContext.release_state``: the JVM's state stores of the folder's
    checkpoints) runs on the topology's folder while it still exists, once per drop."""
    seen = []
    m = TopologyManager(Ctx(tmp_path / "data"), topology_factory=factory)
    persistence.install(m, release=lambda folder: seen.append((folder, folder.exists())))
    m.run_script(m.create("r1"), "CREATE SINK k TYPE stdout;")
    m.delete("r1")
    assert seen == [(tmp_path / "data/topologies/r1", True)]
    assert not (tmp_path / "data/topologies/r1").exists()
    m.delete("r1")  # nothing left to release
    assert len(seen) == 1
