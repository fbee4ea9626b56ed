"""Plugins and user-defined states on a running topology (the in-process query runner, no Spark)."""
from __future__ import annotations

import json
import os

import pytest

from sbpy.bql.errors import BQLError
from sbpy.bql.parser import parse_script
from sbpy.plugins.loader import load_modules, loaded_plugins
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology
from sbpy.server.uds_storage import FsStorage, InMemoryStorage

from local_runner import start_local
from topology_util import lines

load_modules(["sbpy.plugins.examples", "faulty_plugin"])  # what `plugins:` in sensorbee.yaml does


class Ctx:
    def __init__(self, data_dir, storage):
        self.data_dir = data_dir
        self.uds_storage = storage


@pytest.fixture
def storage(tmp_path):
    return FsStorage(tmp_path / "uds")


@pytest.fixture
def topo(tmp_path, storage):
    t = Topology("t1", Ctx(tmp_path / "data", storage), query_starter=start_local)
    yield t
    t.stop()


def run(t, script):
    return [t.execute(p) for p in parse_script(script)]


def ev(t, expr):
    return run(t, f"EVAL {expr};")[0]["result"]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def error_of(t, stmt):
    with pytest.raises(BQLError) as e:
        run(t, stmt)
    return e.value.message


# ---------------------------------------------------------------- plugins on a topology


def test_plugin_udfs_in_eval_and_loaded_specs(topo):
    assert ev(topo, 'my_inc("10")') == 11
    assert ev(topo, 'my_join("a", "b", "-")') == "a-b"
    assert "sbpy.plugins.examples" in loaded_plugins() and "faulty_plugin" in loaded_plugins()
    run(topo, "CREATE STATE c TYPE my_counter WITH start = 7;")
    assert [ev(topo, 'my_next_count("c")') for _ in range(2)] == [7, 8]
    assert "state 'nope' was not found" in error_of(topo, 'EVAL my_next_count("nope");')


def test_counter_shared_by_two_queries_never_repeats(topo, tmp_path):
    n = 150
    write(tmp_path / "a.jsonl", [{"src": "a", "k": i} for i in range(n)])
    write(tmp_path / "b.jsonl", [{"src": "b", "k": i} for i in range(n)])
    run(topo, f"""
        CREATE STATE c TYPE my_counter WITH start = 1;
        CREATE PAUSED SOURCE a TYPE file WITH path = "{tmp_path}/a.jsonl";
        CREATE PAUSED SOURCE b TYPE file WITH path = "{tmp_path}/b.jsonl";
        CREATE STREAM ia AS SELECT RSTREAM my_next_count("c") AS id, src, k FROM a [RANGE 1 TUPLES];
        CREATE STREAM ib AS SELECT RSTREAM my_next_count("c") AS id, src, k FROM b [RANGE 1 TUPLES];
        CREATE SINK ka TYPE file WITH path = "{tmp_path}/oa.jsonl";
        CREATE SINK kb TYPE file WITH path = "{tmp_path}/ob.jsonl";
        INSERT INTO ka FROM ia;
        INSERT INTO kb FROM ib;
        RESUME SOURCE a; RESUME SOURCE b;""")
    assert all(c.on_driver for c in topo.consumers.values())  # they call a UDS-backed function
    assert wait_until(lambda: len(lines(tmp_path / "oa.jsonl")) == n and len(lines(tmp_path / "ob.jsonl")) == n, 20)
    rows = lines(tmp_path / "oa.jsonl") + lines(tmp_path / "ob.jsonl")
    ids = [r["id"] for r in rows]
    assert sorted(ids) == list(range(1, 2 * n + 1))  # shared: never repeated, none lost
    for src in "ab":  # in arrival order within each stream
        mine = [r["id"] for r in rows if r["src"] == src]
        assert mine == sorted(mine)
    # the driver-mode pipeline keeps per-batch snapshots under the consumer's checkpoint folder
    snaps = list((tmp_path / "data").rglob("driver-state/*.snap"))
    assert snaps and all(p.stat().st_size > 0 for p in snaps)


def test_stateless_plugin_udf_runs_like_a_worker(topo, tmp_path):
    write(tmp_path / "in.jsonl", [{"v": str(i)} for i in range(5)])
    run(topo, f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";
        CREATE STREAM x AS SELECT RSTREAM my_inc(v) AS w, my_join("a", v, ":") AS j FROM s [RANGE 1 TUPLES];
        CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
        INSERT INTO k FROM x;
        RESUME SOURCE s;""")
    consumer = topo.consumers["k"]
    assert consumer.on_driver is False  # built from StageSpec.plugins, as a Spark worker builds it
    assert wait_until(lambda: len(lines(tmp_path / "out.jsonl")) == 5, 10)
    assert lines(tmp_path / "out.jsonl") == [{"w": i + 1, "j": f"a:{i}"} for i in range(5)]


def test_plugin_source_udsf_and_sink(topo, tmp_path):
    from faulty_plugin import FailingSink

    run(topo, """
        CREATE PAUSED SOURCE s TYPE faulty_source WITH n = 6;
        CREATE STREAM x AS SELECT RSTREAM * FROM faulty_udsf("s", false) [RANGE 1 TUPLES];
        CREATE STREAM y AS SELECT RSTREAM x AS i FROM x [RANGE 1 TUPLES];
        CREATE SINK k TYPE faulty_sink WITH name = "k1", fail_on = 4;
        INSERT INTO k FROM y;""")
    dropped = []
    topo.subscribe_dropped(dropped.append)
    run(topo, "RESUME SOURCE s;")
    assert wait_until(lambda: topo.node("stream", "y")["state"] == "stopped", 10)
    assert wait_until(lambda: topo.node("sink", "k")["status"]["input_stats"]["num_received_total"] == 5, 5)
    # x = 3 made the UDSF raise: that tuple was dropped, the query went on; i = 4 failed the sink's write
    # of its batch, which is counted, not fatal
    assert [d["error"] for d in dropped if d["node_name"] == "x"] == ["KeyError: 'no x for you'"]
    assert {r["i"] for r in FailingSink.ROWS["k1"]} <= {0, 1, 2, 5}
    assert topo.node("sink", "k")["status"]["input_stats"]["num_errors"] >= 1
    assert topo.node("sink", "k")["state"] == "running"


def test_plugin_errors_are_statement_errors_or_dropped_tuples(topo, tmp_path):
    assert "source constructor exploded" in error_of(topo, "CREATE SOURCE s TYPE faulty_source WITH explode = true;")
    run(topo, "CREATE PAUSED SOURCE s TYPE faulty_source WITH n = 5;")
    msg = error_of(topo, 'CREATE STREAM x AS SELECT RSTREAM * FROM faulty_udsf("s", true) [RANGE 1 TUPLES];')
    assert "UDSF constructor exploded" in msg
    assert "function 'no_such_fn' is not registered" in error_of(
        topo, "CREATE STREAM x AS SELECT RSTREAM no_such_fn(i) FROM s [RANGE 1 TUPLES];")
    assert "sink type 'nope' is not registered" in error_of(topo, "CREATE SINK k TYPE nope;")
    run(topo, f"""
        CREATE STREAM x AS SELECT RSTREAM faulty_fail_on(i, 2) AS i FROM s [RANGE 1 TUPLES];
        CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl";
        INSERT INTO k FROM x;""")
    dropped = []
    topo.subscribe_dropped(dropped.append)
    run(topo, "RESUME SOURCE s;")
    # a batch's outputs reach the sink before its dropped tuples are reported: wait for both
    assert wait_until(lambda: len(lines(tmp_path / "out.jsonl")) == 4 and dropped, 10)
    assert lines(tmp_path / "out.jsonl") == [{"i": 0}, {"i": 1}, {"i": 3}, {"i": 4}]
    assert [d["data"] for d in dropped] == [{"i": 2}] and "faulty_fail_on got 2" in dropped[0]["error"]
    # a source whose run() raises stops with an error; the topology stays usable
    run(topo, "CREATE SOURCE bad TYPE faulty_source WITH fail_at = 2;")
    assert wait_until(lambda: topo.node("source", "bad")["state"] == "stopped", 5)
    assert "source broke" in topo.node("source", "bad")["status"].get("error", "")
    assert ev(topo, "1 + 1") == 2


# ---------------------------------------------------------------- state statements


def test_every_state_statement_form(topo, storage):
    run(topo, "CREATE STATE b TYPE faulty_box WITH value = 1;")
    assert ev(topo, 'faulty_box_value("b")') == 1
    assert error_of(topo, "CREATE STATE B TYPE faulty_box;") == "state 'b' already exists"
    assert error_of(topo, "CREATE STATE z TYPE nope;") == "state type 'nope' is not registered"
    run(topo, "UPDATE STATE b SET value = 2; SAVE STATE b; UPDATE STATE b SET value = 3; SAVE STATE b TAG v3;")
    assert storage.list("t1") == {"b": ["default", "v3"]}
    old = topo.states.get("b")
    run(topo, "LOAD STATE b TYPE faulty_box;")  # no in-place load: replaced, the old one terminated
    assert ev(topo, 'faulty_box_value("b")') == 2 and old.terminated
    run(topo, "LOAD STATE b TYPE faulty_box TAG V3;")
    assert ev(topo, 'faulty_box_value("b")') == 3
    assert error_of(topo, "LOAD STATE b TYPE my_counter;") == "state 'b' has type 'faulty_box', not 'my_counter'"
    assert error_of(topo, "LOAD STATE b TYPE faulty_box TAG nope;") == "state 'b' was not saved with tag 'nope'"
    run(topo, "LOAD STATE n TYPE faulty_box TAG nope OR CREATE IF NOT SAVED WITH value = 9;")
    assert ev(topo, 'faulty_box_value("n")') == 9
    run(topo, "DROP STATE n;")
    assert error_of(topo, "DROP STATE n;") == "state 'n' was not found"
    assert error_of(topo, "SAVE STATE n;") == "state 'n' was not found"
    assert error_of(topo, "UPDATE STATE n SET value = 1;") == "state 'n' was not found"
    run(topo, "CREATE STATE c TYPE my_counter;")
    assert error_of(topo, "UPDATE STATE c SET x = 1;") == "state 'c' cannot be updated"
    assert error_of(topo, "UPDATE SOURCE c SET x = 1;") == "source 'c' was not found"
    topo.stop()
    assert old.terminated and topo.states.names() == []  # stopping the topology terminates its states


def test_uds_sink_on_a_running_topology(topo, tmp_path):
    from sbpy.plugins.examples import tweets

    write(tmp_path / "train.jsonl", tweets.generate(200, seed=1))
    assert "state 'm' was not found" in error_of(topo, 'CREATE SINK k TYPE uds WITH name = "m";')
    run(topo, "CREATE STATE c TYPE my_counter;")
    assert "does not support writing tuples" in error_of(topo, 'CREATE SINK k TYPE uds WITH name = "c";')
    run(topo, f"""
        CREATE STATE m TYPE jubaclassifier_arow WITH label_field = "gender";
        CREATE SINK k TYPE uds WITH name = "m";
        CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/train.jsonl";
        CREATE STREAM fv AS SELECT RSTREAM gender, {{"t": nlp_weight_tf(nlp_split(text, " "))}} AS feature_vector
            FROM s [RANGE 1 TUPLES] WHERE gender != "";
        INSERT INTO k FROM fv;
        RESUME SOURCE s;""")
    labelled = sum(1 for t in tweets.generate(200, seed=1) if t["gender"])
    assert wait_until(lambda: topo.node("sink", "k")["status"]["input_stats"]["num_received_total"] == labelled, 15)
    assert sorted(topo.states.get("m").weights) == ["female", "male"]


# ---------------------------------------------------------------- saving, restarting, crashing


def test_save_restart_load_gives_an_equal_state(tmp_path, storage):
    t = Topology("t1", Ctx(tmp_path / "data", storage), query_starter=start_local)
    run(t, 'CREATE STATE m TYPE jubaclassifier_arow WITH label_field = "l"; CREATE STATE c TYPE my_counter;')
    for _ in range(3):
        t.states.get("m").write({"l": "a", "feature_vector": {"x": 1}})
        t.states.get("m").write({"l": "b", "feature_vector": {"y": 1}})
    assert [ev(t, 'my_next_count("c")') for _ in range(4)] == [1, 2, 3, 4]
    run(t, "SAVE STATE m; SAVE STATE c TAG after4;")
    weights = json.loads(json.dumps(t.states.get("m").weights))
    t.stop()
    t2 = Topology("t1", Ctx(tmp_path / "data2", FsStorage(tmp_path / "uds")), query_starter=start_local)
    try:
        run(t2, "LOAD STATE m TYPE jubaclassifier_arow; LOAD STATE c TYPE my_counter TAG after4;")
        assert t2.states.get("m").weights == weights
        assert ev(t2, 'my_next_count("c")') == 5
        assert ev(t2, 'juba_classified_label(jubaclassify("m", {"x": 1}))') == "a"
    finally:
        t2.stop()


def test_crash_during_save_keeps_the_previous_state(topo, storage, tmp_path, monkeypatch):
    run(topo, "CREATE STATE b TYPE faulty_box WITH value = 1; SAVE STATE b;")
    before = (tmp_path / "uds" / "t1-b-default.state").read_bytes()
    # the state's save raises half-way through writing
    run(topo, "UPDATE STATE b SET value = 2, crash_after = 5;")
    assert "cannot save state 'b': disk on fire" in error_of(topo, "SAVE STATE b;")
    # the storage's commit (rename) fails
    run(topo, "UPDATE STATE b SET crash_after = -1;")

    def no_rename(*a, **k):
        raise OSError("rename failed")

    monkeypatch.setattr(os, "replace", no_rename)
    assert "cannot save state 'b': rename failed" in error_of(topo, "SAVE STATE b;")
    monkeypatch.undo()
    assert (tmp_path / "uds" / "t1-b-default.state").read_bytes() == before
    assert [p.name for p in (tmp_path / "uds").iterdir()] == ["t1-b-default.state"]  # no temp file left
    run(topo, "LOAD STATE b TYPE faulty_box;")
    assert ev(topo, 'faulty_box_value("b")') == 1


def test_replayed_statements_do_not_save_and_recreate_states(tmp_path):
    storage = InMemoryStorage()
    t = Topology("t1", Ctx(tmp_path / "data", storage), query_starter=start_local)
    run(t, "CREATE STATE c TYPE my_counter WITH start = 10;")
    assert ev(t, 'my_next_count("c")') == 10
    run(t, "SAVE STATE c;")
    assert ev(t, 'my_next_count("c")') == 11
    t.stop()
    t2 = Topology("t1", Ctx(tmp_path / "data", storage), query_starter=start_local)
    t2.recovering = True  # what persistence.restore does while it replays statements.bql
    try:
        run(t2, "CREATE STATE c TYPE my_counter WITH start = 10; SAVE STATE c; LOAD STATE c TYPE nope;")
        t2.recovering = False
        assert ev(t2, 'my_next_count("c")') == 10  # CREATE came back fresh
        run(t2, "LOAD STATE c TYPE my_counter;")  # the replayed SAVE did not overwrite the saved 10
        assert ev(t2, 'my_next_count("c")') == 11
    finally:
        t2.stop()


def test_server_restart_replays_state_statements_and_load_gives_the_saved_state(tmp_path):
    """A real server (REST) with ``storage.uds: fs``: SAVE STATE, restart on the same data folder (the
    topology is restored from its statements; the replayed SAVE does not overwrite the save), LOAD."""
    import httpx

    from sbpy.server.config import config_from_dict
    from server_harness import start_server

    config = config_from_dict({"plugins": ["sbpy.plugins.examples"],
                               "storage": {"uds": {"type": "fs", "params": {"dir": str(tmp_path / "uds")}}}})

    def post(srv, q):
        r = httpx.post(f"{srv.api}/topologies/t/queries", json={"queries": q}, timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    srv = start_server(config, tmp_path / "data")
    try:
        assert httpx.post(f"{srv.api}/topologies", json={"name": "t"}, timeout=10).status_code == 200
        post(srv, 'CREATE STATE c TYPE my_counter WITH start = 5; CREATE STATE m TYPE jubaclassifier_arow '
                  'WITH label_field = "l";')
        assert [post(srv, 'EVAL my_next_count("c");')["result"] for _ in range(3)] == [5, 6, 7]
        post(srv, "SAVE STATE c; SAVE STATE m TAG empty;")
        assert post(srv, 'EVAL my_next_count("c");')["result"] == 8
    finally:
        srv.stop()
    saved = (tmp_path / "uds" / "t-c-default.state").read_bytes()
    srv = start_server(config, tmp_path / "data")
    try:
        assert post(srv, 'EVAL my_next_count("c");')["result"] == 5  # CREATE STATE came back, fresh
        assert (tmp_path / "uds" / "t-c-default.state").read_bytes() == saved  # the SAVE was not replayed
        post(srv, "LOAD STATE c TYPE my_counter; LOAD STATE m TYPE jubaclassifier_arow TAG empty;")
        assert post(srv, 'EVAL my_next_count("c");')["result"] == 8  # what was saved: 7 issued before
        r = httpx.post(f"{srv.api}/topologies/t/queries", json={"queries": "LOAD STATE c TYPE my_counter TAG x;"},
                       timeout=30)
        assert r.status_code == 400 and r.json()["error"]["meta"]["error"] == "state 'c' was not saved with tag 'x'"
    finally:
        srv.stop()
