"""A throwaway Spark standalone cluster on 127.0.0.1 (one master, one or more workers) for tests and B6.

Started with the installed pyspark's ``bin/spark-class`` (the pip wheel has no ``sbin/start-*.sh``).
Each JVM runs in its own process group, so ``stop()`` also kills the executor JVM and its Python
workers that the worker forked. Example::

    with StandaloneCluster(tmp_path) as cluster:
        cluster.url          # "spark://127.0.0.1:PORT"
        cluster.state()      # the master's /json/ document
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

_TESTS = str(Path(__file__).resolve().parents[1])  # tests/ (standalone scripts add only tests/e2e)
if _TESTS not in sys.path:
    sys.path.append(_TESTS)
from loopback import free_port  # noqa: E402 - re-exported for server_process, crash_harness, the stress scripts
from sbpy.bql.spark.spark_home import pyspark_home  # noqa: E402 - the installed pyspark's own Spark home


def cluster_env() -> dict[str, str]:
    """The environment of the cluster's JVMs (and of a driver that talks to them)."""
    env = dict(os.environ)
    env.update(SPARK_HOME=str(pyspark_home()), SPARK_LOCAL_IP="127.0.0.1", SPARK_MASTER_HOST="127.0.0.1")
    env.pop("PYSPARK_GATEWAY_PORT", None)
    env.pop("PYSPARK_GATEWAY_SECRET", None)
    return env


def kill_group(proc: subprocess.Popen | None, grace: float = 10.0) -> None:
    """SIGTERM the process group of ``proc`` (started with ``start_new_session``), SIGKILL after ``grace``."""
    if proc is None:
        return
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = None
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if pgid is not None:
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        if sig == signal.SIGTERM and pgid is not None:
            # the group leader is gone; make sure no child (executor, python worker) survives it
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return


class StandaloneCluster:
    """A master and ``workers`` workers (each ``cores`` cores, ``memory`` of executor memory) on 127.0.0.1."""

    def __init__(self, base_dir: str | os.PathLike[str], cores: int = 1, memory: str = "1g",
                 start_timeout: float = 180.0, workers: int = 1):
        self.base_dir = Path(base_dir)
        self.cores, self.memory, self.start_timeout = cores, memory, start_timeout
        self.port = free_port()
        self.webui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.webui = f"http://127.0.0.1:{self.webui_port}"
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []
        self.master_log = self.base_dir / "master.log"
        self.worker_logs = [self.base_dir / f"worker-{i}.log" for i in range(workers)]
        self.work_dir = self.base_dir / "work"

    # ------------------------------------------------------------ lifecycle

    def _spawn(self, args: list[str], log: Path) -> subprocess.Popen:
        spark_class = os.path.join(pyspark_home(), "bin", "spark-class")
        with open(log, "wb") as out:
            return subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=cluster_env(), cwd=self.base_dir,
                                    start_new_session=True)

    def start(self) -> StandaloneCluster:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(exist_ok=True)
        try:
            self.master = self._spawn(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                       "--port", str(self.port), "--webui-port", str(self.webui_port)],
                                      self.master_log)
            deadline = time.monotonic() + self.start_timeout
            self._wait(lambda: self.state() is not None, deadline, "the master's web UI", self.master)
            for log in self.worker_logs:
                self.workers.append(self._spawn(
                    ["org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                     "--webui-port", str(free_port()), "--cores", str(self.cores), "--memory", self.memory,
                     "--work-dir", str(self.work_dir)], log))
            for worker in self.workers:
                self._wait(lambda: self.alive_workers() >= len(self.workers), deadline,
                           f"{len(self.workers)} ALIVE worker(s)", worker)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill the workers (with their executors) and the master; safe to call twice."""
        for worker in self.workers:
            kill_group(worker)
        kill_group(self.master)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _wait(self, ready, deadline: float, what: str, proc: subprocess.Popen) -> None:
        while not ready():
            if proc.poll() is not None:
                raise RuntimeError(f"spark-class exited ({proc.returncode}) waiting for {what}:\n"
                                   f"{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}:\n{self.logs()}")
            time.sleep(0.5)

    # ------------------------------------------------------------ inspection

    def state(self) -> dict[str, Any] | None:
        """The master's ``/json/`` document (workers, activeapps, completedapps), or None if unreachable."""
        try:
            with urllib.request.urlopen(self.webui + "/json/", timeout=5) as resp:
                return json.load(resp)
        except (OSError, ValueError):
            return None

    def alive_workers(self) -> int:
        state = self.state() or {}
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def apps(self) -> list[dict[str, Any]]:
        """Active and completed applications the master knows."""
        state = self.state() or {}
        return list(state.get("activeapps", [])) + list(state.get("completedapps", []))

    def logs(self, tail: int = 4000) -> str:
        parts = []
        for path in (self.master_log, *self.worker_logs):
            if path.exists():
                parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)

    def executor_logs(self, tail: int = 4000) -> str:
        """The stderr of every executor the worker ran (``work/<app>/<executor>/stderr``)."""
        parts = []
        for path in sorted(self.work_dir.glob("*/*/stderr")):
            parts.append(f"--- {path.relative_to(self.work_dir)}\n{path.read_text(errors='replace')[-tail:]}")
        return "\n".join(parts)
