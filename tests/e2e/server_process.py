"""An ``sbpy run`` server in its own process (for the kill -9 recovery tests): its config, start/kill,
REST calls, a condition wait that shows the server log on a timeout, and a warm-up pipeline."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from cluster import free_port


def new_server(tmp_path: Path) -> Server:
    """A (not yet started) server on a free port whose config (``tmp_path/sensorbee.yaml``) keeps its data
    in ``tmp_path/data`` and runs Spark on ``local[2]``; its output goes to ``tmp_path/server.log``."""
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
    return Server(config, port, tmp_path / "server.log")


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

    def file_pipeline(self, topology: str, stream: str, query: str, src: Path, out: Path,
                      interval: float) -> None:
        """Create ``topology``: a paused file source ``src`` reading ``src`` a line every ``interval`` s, the
        stream ``stream`` AS ``query`` and a file sink ``snk`` writing ``out``; then resume the source."""
        r = httpx.post(self.api + "/topologies", json={"name": topology}, timeout=30)
        assert r.status_code == 200, r.text
        self.queries(topology, f"""
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", interval = {interval};
            CREATE STREAM {stream} AS {query};
            CREATE SINK snk TYPE file WITH path = "{out}";
            INSERT INTO snk FROM {stream};
            RESUME SOURCE src;""")

    def wait_stopped(self, topology: str, stream: str, timeout: float, what: str) -> None:
        """Wait until stream ``stream`` of ``topology`` has stopped (its input ended and it drained)."""
        wait(lambda: self.get(f"/topologies/{topology}/streams/{stream}")["stream"]["state"] == "stopped",
             timeout, what, self)

    def drop(self, topology: str) -> None:
        """Delete ``topology`` (its queries stopped, its sinks closed)."""
        r = httpx.delete(f"{self.api}/topologies/{topology}", timeout=60)
        assert r.status_code == 200, r.text

    def source_sent(self, topology: str) -> int:
        """How many tuples the source ``src`` of ``topology`` has sent."""
        status = self.get(f"/topologies/{topology}/sources/src")["source"]["status"]
        return status["output_stats"]["num_sent_total"]

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
    server.wait_stopped("warm", "w", 180, "the warm-up pipeline")
    assert lines(out) == [{"n": 1}]
    server.drop("warm")
