"""Crash recovery: ``kill -9`` of ``sbpy run`` in the middle of a file source → ``[RANGE 10 TUPLES]``
aggregate → file sink pipeline, then a restart on the same config: the persisted topology is rebuilt,
the source resumes from its journal, the query from its checkpoint, and the sink holds every output
tuple exactly once, in order."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from sbpy.bql.runtime.testing import run_query

pytestmark = pytest.mark.spark

N = 600  # input lines
INTERVAL = 0.025  # seconds between lines: the source runs ~15 s
QUERY = "SELECT RSTREAM count(*) AS n, sum(x) AS s, max(id) AS last FROM src [RANGE 10 TUPLES]"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``sbpy run -c <config>`` in its own process group; output goes to a log file."""

    def __init__(self, config: Path, port: int, log: Path):
        self.config, self.port, self.log = config, port, log
        self.api = f"http://127.0.0.1:{port}/api/v1"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> None:
        out = open(self.log, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", str(self.config)],
                                     stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        deadline = time.monotonic() + timeout
        while True:
            try:
                httpx.get(self.api + "/topologies", timeout=2).raise_for_status()
                return
            except httpx.HTTPError:
                assert self.proc.poll() is None, f"the server exited:\n{self.tail()}"
                assert time.monotonic() < deadline, f"the server did not start:\n{self.tail()}"
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the whole process group (the server and anything it started) and reap it."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        self.proc = None

    def get(self, path: str) -> dict[str, Any]:
        r = httpx.get(self.api + path, timeout=30)
        r.raise_for_status()
        return r.json()

    def queries(self, topology: str, bql: str) -> None:
        r = httpx.post(f"{self.api}/topologies/{topology}/queries", json={"queries": bql}, timeout=180)
        assert r.status_code == 200, r.text

    def tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def lines(path: Path) -> list[Any]:
    """The complete JSON lines of ``path`` (a torn last line is ignored)."""
    if not path.exists():
        return []
    text = path.read_text()
    return [json.loads(x) for x in text.split("\n")[:-1] if x]


def wait(pred, timeout: float, what: str, server: Server) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{server.tail()}"
        time.sleep(0.1)


def warm_up(server: Server, tmp_path: Path) -> None:
    """Run a tiny pipeline to its end first: Spark's first micro-batch (Python workers, the operator)
    is slow, and the real pipeline must produce outputs while its source is still reading."""
    src, out = tmp_path / "warm.jsonl", tmp_path / "warm-out.jsonl"
    src.write_text('{"a": 1}\n')
    assert httpx.post(server.api + "/topologies", json={"name": "warm"}, timeout=30).status_code == 200
    server.queries("warm", f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE STREAM w AS SELECT RSTREAM count(*) AS n FROM s [RANGE 10 TUPLES];
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM w;
        RESUME SOURCE s;""")
    wait(lambda: server.get("/topologies/warm/streams/w")["stream"]["state"] == "stopped", 180,
         "the warm-up pipeline", server)
    assert lines(out) == [{"n": 1}]
    assert httpx.delete(server.api + "/topologies/warm", timeout=60).status_code == 200


def test_kill_9_and_restart_exactly_once(tmp_path):
    rows = [{"id": i, "x": i} for i in range(N)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"src": rows})
    assert len(expected) == N
    port = free_port()
    config = tmp_path / "sensorbee.yaml"
    config.write_text(f"""network:
  listen_on: "127.0.0.1:{port}"
logging:
  min_log_level: warn
spark:
  master: "local[2]"
  data_dir: data
""")
    server = Server(config, port, tmp_path / "server.log")
    try:
        server.start()
        t0 = time.monotonic()
        warm_up(server, tmp_path)
        print(f"warm-up: {time.monotonic() - t0:.1f} s")
        t0 = time.monotonic()
        r = httpx.post(server.api + "/topologies", json={"name": "rec"}, timeout=30)
        assert r.status_code == 200, r.text
        server.queries("rec", f"""
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = {INTERVAL};
            CREATE STREAM agg AS {QUERY};
            CREATE SINK snk TYPE file WITH path = "{out}";
            INSERT INTO snk FROM agg;
            RESUME SOURCE src;""")

        # kill -9 while the source is still reading, normally once the sink has outputs; on a very
        # slow machine (no output yet when 80 % of the input is journaled) still before the source ends
        def source_sent() -> int:
            return server.get("/topologies/rec/sources/src")["source"]["status"]["output_stats"]["num_sent_total"]

        wait(lambda: len(lines(out)) >= 1 or source_sent() >= N * 0.8, 240, "the first outputs", server)
        server.kill()
        sent = len((tmp_path / "data/topologies/rec/journal/src/log.jsonl").read_text().splitlines())
        before = lines(out)
        print(f"killed after {len(before)} outputs, {sent} journal entries, {time.monotonic() - t0:.1f} s")
        assert sent < N, "the source ended before the crash"
        assert before == expected[:len(before)]

        t0 = time.monotonic()
        server.start()
        print(f"restarted: {time.monotonic() - t0:.1f} s")
        assert server.get("/topologies") == {"topologies": [{"name": "rec"}]}
        wait(lambda: server.get("/topologies/rec/streams/agg")["stream"]["state"] == "stopped", 240,
             "the stream to stop after the restart", server)
        wait(lambda: len(lines(out)) >= N, 30, "every output in the sink", server)
        print(f"recovered: {time.monotonic() - t0:.1f} s")
        r = httpx.delete(server.api + "/topologies/rec", timeout=60)
        assert r.status_code == 200, r.text
        text = out.read_text()
    finally:
        server.kill()
    assert text.endswith("\n")
    got = [json.loads(x) for x in text.splitlines()]  # no torn line, no blank line
    assert len(got) == len(expected)
    assert got == expected  # every output exactly once, in order
    assert not (tmp_path / "data/topologies/rec").exists()
