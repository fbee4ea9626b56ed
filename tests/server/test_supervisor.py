"""The Spark supervisor without Spark: a context whose JVM is reported dead. It marks the nodes
``starting``, drops the dead session, re-attaches every running query through ``Topology.start_query``,
marks the nodes ``running`` again; a restart that fails is reported (``/runtime_status`` answers 503 J0010)
and tried again. The real kill -9 is ``tests/e2e/test_jvm_kill.py``."""
from __future__ import annotations

import logging
import threading

import httpx
from local_runner import start_local
from sbpy.server.supervisor import FAILED, RUNNING, Supervisor
from sbpy.server.topology import Topology
from topology_util import Ctx, run, write


class DyingCtx(Ctx):
    """A context whose JVM dies when ``kill()`` is called; ``spark()`` (the restart) fails while
    ``broken`` and otherwise records the node states it sees."""

    def __init__(self, data_dir, topology=None):
        super().__init__(data_dir)
        self.started, self.alive, self.broken = True, True, False
        self.pid, self.dropped = 100, []
        self.topology = topology
        self.seen_while_restarting: list[tuple[str, str]] = []

    def kill(self):
        self.alive = False

    def jvm_alive(self):
        return self.alive

    def jvm_pid(self):
        return self.pid if self.started else None

    def drop_dead_session(self):
        self.dropped.append(self.pid)
        self.started = False
        return -9

    def spark(self):
        if self.broken:
            raise RuntimeError("no JVM could be launched")
        if self.topology is not None:
            t = self.topology
            self.seen_while_restarting = [(n["name"], n["state"]) for k in ("stream", "sink")
                                          for n in t.list_nodes(k)]
        self.started, self.alive, self.pid = True, True, self.pid + 1
        return object()


def test_dead_jvm_marks_nodes_and_reattaches_queries(tmp_path, caplog):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write(src, [{"a": i} for i in range(3)])
    ctx = DyingCtx(tmp_path / "data")
    t = Topology("t", ctx, query_starter=start_local)
    ctx.topology = t
    run(t, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
               CREATE STREAM x AS SELECT RSTREAM a FROM s [RANGE 1 TUPLES];
               CREATE SINK k TYPE file WITH path = "{out}";
               INSERT INTO k FROM x;""")
    old = t.consumers["k"].handle
    supervisor = Supervisor(ctx, lambda: [t])
    try:
        supervisor.check()
        assert supervisor.state == RUNNING and supervisor.restarts == 0 and t.consumers["k"].handle is old
        ctx.kill()
        with caplog.at_level(logging.INFO, logger="sbpy.supervisor"):
            supervisor.check()
        new = t.consumers["k"].handle
        assert new is not None and new is not old
        assert ctx.dropped == [100] and supervisor.restarts == 1 and supervisor.state == RUNNING
        assert sorted(ctx.seen_while_restarting) == [("k", "starting"), ("x", "starting")]
        assert [n["state"] for k in ("stream", "sink") for n in t.list_nodes(k)] == ["running", "running"]
        assert "error" not in t.node("sink", "k")["status"]
        errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == [("the Spark driver JVM (pid 100) died: restarting Spark and re-attaching 1 queries "
                           "from their checkpoints")]
    finally:
        old.stop()
        t.stop()


def test_failed_restart_is_reported_and_retried(server_factory, tmp_path):
    srv = server_factory()
    ctx = DyingCtx(tmp_path / "dying")
    supervisor = Supervisor(ctx, list, retry=0.0)
    srv.app.state.supervisor.stop()
    srv.app.state.supervisor = supervisor
    with httpx.Client(base_url=srv.api, timeout=30) as c:
        assert c.get("/runtime_status").status_code == 200
        ctx.kill()
        ctx.broken = True
        supervisor.check()
        assert supervisor.state == FAILED
        r = c.get("/runtime_status")
        assert r.status_code == 503
        error = r.json()["error"]
        assert error["code"] == "J0010" and "no JVM could be launched" in error["message"]
        assert error["meta"]["state"] == "failed" and error["meta"]["restarts"] == 0
        ctx.broken = False
        supervisor.check()  # the retry
        assert supervisor.state == RUNNING and supervisor.restarts == 1
        assert c.get("/runtime_status").status_code == 200


def test_hung_jvm_counts_as_dead(tmp_path, monkeypatch):
    from sbpy.server import supervisor as supervisor_module

    release, pinged = threading.Event(), threading.Event()

    def hanging_ping():  # the JVM never answers
        pinged.set()
        release.wait(30)
        return False

    monkeypatch.setattr(supervisor_module.gateway, "ping", hanging_ping)
    ctx = DyingCtx(tmp_path / "data")
    supervisor = Supervisor(ctx, list, interval=3600, hang_timeout=0.0).start()  # rounds run by hand
    try:
        supervisor.check()  # the process runs; a ping is asked
        assert pinged.wait(10) and supervisor.state == RUNNING
        supervisor.check()  # unanswered longer than hang_timeout
        assert ctx.dropped == [100] and supervisor.restarts == 1 and supervisor.state == RUNNING
    finally:
        release.set()
        supervisor.stop()
