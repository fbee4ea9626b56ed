"""kill -9 of the Spark driver JVM under a running topology: the supervisor notices it, shows the nodes
``starting``, launches a new JVM (the old one reaped, no zombie) and re-attaches the query from its
checkpoint; the sink gets every output exactly once."""
from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path

import pytest
from e2e_util import lines
from sbpy.bql.parser import parse_script
from sbpy.bql.runtime.testing import run_query
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.supervisor import RESTARTING, RUNNING, Supervisor
from sbpy.server.topology import Topology

pytestmark = pytest.mark.spark

QUERY = "SELECT RSTREAM count(*) AS n, max(a) AS last FROM s [RANGE 5 TUPLES]"


def _zombie_or_running(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.exists() and stat.read_text().split(") ", 1)[1][:1] in "RSDZT"
    except OSError:
        return False


def test_jvm_killed_mid_stream_is_restarted_and_queries_reattach(server_context, tmp_path, caplog):
    rows = [{"a": i} for i in range(300)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"s": rows})
    t = Topology("jvmkill", server_context)
    supervisor = Supervisor(server_context, lambda: [t], interval=0.1)
    try:
        for p in parse_script(f"""
                CREATE PAUSED SOURCE s TYPE file WITH path = "{src}", interval = 0.02;
                CREATE STREAM x AS {QUERY};
                CREATE SINK k TYPE file WITH path = "{out}";
                INSERT INTO k FROM x;
                RESUME SOURCE s;"""):
            t.execute(p)
        supervisor.start()
        assert wait_until(lambda: len(lines(out)) >= 5, 180, 0.05)
        pid = server_context.jvm_pid()
        assert pid is not None and _zombie_or_running(pid)
        with caplog.at_level(logging.INFO, logger="sbpy.supervisor"):
            os.kill(pid, signal.SIGKILL)
            assert wait_until(lambda: supervisor.state == RESTARTING, 30, 0.02)
            assert wait_until(lambda: t.node("sink", "k")["state"] == "starting", 30, 0.02)
            assert "Spark is restarting" in t.node("stream", "x")["status"]["error"]
            assert wait_until(lambda: supervisor.restarts == 1 and supervisor.state == RUNNING, 300, 0.1)
        assert not _zombie_or_running(pid)  # reaped
        assert server_context.jvm_pid() not in (None, pid)
        assert t.node("sink", "k")["state"] == "running" and "error" not in t.node("sink", "k")["status"]
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "sbpy.supervisor"]
        assert len(errors) == 1 and f"pid {pid}" in errors[0].getMessage()
        assert wait_until(lambda: len(lines(out)) >= len(expected), 300, 0.1)
        assert wait_until(lambda: t.node("stream", "x")["state"] == "stopped", 120, 0.1)
    finally:
        supervisor.stop()
        t.stop()
    assert lines(out) == expected
