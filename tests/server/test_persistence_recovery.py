"""Persistence edge cases (no Spark: the local query runner): a ``bql_file`` topology of the config is
resumed from its own files after a restart (it wrote every output again before), a changed
``bql_file`` still starts afresh, a DROP racing a re-CREATE of the same name never deletes the new
topology's files, and a tombstone a crash left behind is swept."""
from __future__ import annotations

import json
import threading

from local_runner import start_local

from sbpy.server import persistence
from sbpy.server.config import config_from_dict
from sbpy.server.manager import TopologyManager
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology


class Ctx:
    def __init__(self, d):
        self.data_dir = d


def factory(name, ctx):
    return Topology(name, ctx, query_starter=start_local)


def _manager(ctx, make=factory):
    m = TopologyManager(ctx, topology_factory=make)
    persistence.install(m)
    return m


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_bql_file_topology_resumes_instead_of_writing_again(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(3)))
    (tmp_path / "t.bql").write_text(f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM s;\n""")
    config = config_from_dict({"topologies": {"t": {"bql_file": "t.bql"}}}, tmp_path / "sb.yaml")
    ctx = Ctx(tmp_path / "data")
    m = _manager(ctx)
    m.load_from_config(config)
    m.run_script(m.get("t"), "RESUME SOURCE s;")  # a statement over REST after the bql_file's
    assert wait_until(lambda: out.exists() and len(_rows(out)) == 3, 10)
    m.stop_all()

    m2 = _manager(ctx)
    m2.load_from_config(config)
    persistence.restore(m2, config)
    t = m2.get("t")
    assert t.node("source", "s")["state"] == "stopped"  # it had ended: not read again
    assert t.node("sink", "k")["state"] == "running"
    m2.stop_all()
    assert _rows(out) == [{"a": 0}, {"a": 1}, {"a": 2}]  # not written a second time
    assert "RESUME SOURCE s" in (tmp_path / "data/topologies/t/statements.bql").read_text()


def test_changed_bql_file_starts_afresh(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(2)))
    bql = tmp_path / "t.bql"
    bql.write_text(f'CREATE SOURCE s TYPE file WITH path = "{src}";\n')
    config = config_from_dict({"topologies": {"t": {"bql_file": "t.bql"}}}, tmp_path / "sb.yaml")
    ctx = Ctx(tmp_path / "data")
    m = _manager(ctx)
    m.load_from_config(config)
    assert wait_until(lambda: m.get("t").node("source", "s")["state"] == "stopped", 10)
    m.stop_all()

    bql.write_text(f'CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";\n')
    m2 = _manager(ctx)
    m2.load_from_config(config)
    assert m2.get("t").node("source", "s")["state"] == "paused"  # read afresh, not resumed
    m2.stop_all()
    assert (tmp_path / "data/topologies/t/statements.bql").read_text().startswith("CREATE PAUSED SOURCE")


class SlowStop(Topology):
    """A topology whose stop blocks until ``release`` is set (a DROP that takes its time)."""

    stopping = threading.Event()
    release = threading.Event()

    def stop(self, keep_states=False):
        if self.name == "t" and not SlowStop.release.is_set():
            SlowStop.stopping.set()
            assert SlowStop.release.wait(30)
        super().stop(keep_states)


def test_drop_racing_recreate_keeps_the_new_topologys_files(tmp_path):
    ctx = Ctx(tmp_path / "data")
    m = _manager(ctx, lambda name, c: SlowStop(name, c, query_starter=start_local))
    m.run_script(m.create("t"), "CREATE SINK k1 TYPE stdout;")
    SlowStop.stopping.clear()
    SlowStop.release.clear()
    drop = threading.Thread(target=m.delete, args=("t",))
    drop.start()
    assert SlowStop.stopping.wait(10)

    def recreate():
        m.run_script(m.create("t"), "CREATE SINK k2 TYPE stdout;")

    create = threading.Thread(target=recreate)
    create.start()
    create.join(1.0)  # before the fix it completed here, and the drop then deleted its files
    SlowStop.release.set()
    drop.join(30)
    create.join(30)
    assert not drop.is_alive() and not create.is_alive()
    text = (tmp_path / "data/topologies/t/statements.bql").read_text()
    assert text == "CREATE SINK k2 TYPE stdout;\n"
    assert list(m.get("t").sinks) == ["k2"]
    m.stop_all()
    assert not list((tmp_path / "data" / persistence.TOMBSTONES).iterdir())


def test_leftover_tombstone_is_swept(tmp_path):
    tomb = tmp_path / "data" / persistence.TOMBSTONES / "t-0123"
    (tomb / "journal").mkdir(parents=True)
    (tomb / "statements.bql").write_text("CREATE SINK k TYPE stdout;\n")
    m = _manager(Ctx(tmp_path / "data"))
    assert not tomb.exists()
    assert persistence.restore(m) == []


def test_restore_removes_temp_files_of_an_interrupted_checkpoint_write(tmp_path):
    ctx = Ctx(tmp_path / "data")
    m = _manager(ctx)
    m.run_script(m.create("t"), "CREATE SINK k TYPE stdout;")
    m.stop_all()
    ck = tmp_path / "data/topologies/t/checkpoints/k-0123-v1"
    (ck / "offsets").mkdir(parents=True)
    (ck / "commits").mkdir()
    (ck / "offsets/.0.58f57e1b.tmp").write_bytes(b"")  # a kill during Spark's first offset write
    (ck / "offsets/.0.crc").write_bytes(b"x")
    m2 = _manager(ctx)
    assert persistence.restore(m2) == ["t"]
    assert sorted(p.name for p in (ck / "offsets").iterdir()) == [".0.crc"]
    m2.stop_all()
