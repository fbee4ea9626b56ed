"""A topology on a real Spark standalone cluster: master + worker on 127.0.0.1 (``spark-class``) and
``sbpy run -c`` as a separate process whose ``spark.master`` is the cluster URL (the one line of
``sensorbee.yaml`` that changes). file source → stream → file sink runs to the end; the sink holds the
expected rows and the application ran on the cluster's executor."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import httpx
import pytest

from cluster import StandaloneCluster, cluster_env, free_port, kill_group

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(540)]

ROWS = [{"id": i, "price": p} for i, p in enumerate([3, 9, 7.5, 8, 1, 12, 0.5])]
EXPECTED = [{"id": r["id"], "price": r["price"]} for r in ROWS if r["price"] < 8]


def wait_for(check, timeout: float, proc: subprocess.Popen, what: str, step: float = 0.5):
    """Poll ``check()`` until it returns a truthy value; fail if ``proc`` exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except (httpx.TransportError, KeyError, ValueError):  # not up yet / not there yet
            value = None
        if value:
            return value
        if proc.poll() is not None:
            raise AssertionError(f"sbpy run exited ({proc.returncode}) waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(step)


def stop_server(proc: subprocess.Popen) -> None:
    """SIGINT (a graceful shutdown that stops the Spark session), then kill whatever is left of the
    process group (the driver JVM and its Python workers)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    kill_group(proc, grace=10)


@pytest.fixture
def cluster(tmp_path):
    with StandaloneCluster(tmp_path / "cluster", cores=1, memory="1g") as running:
        yield running


def test_topology_on_standalone_cluster(cluster, tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "t.bql").write_text(f"""
        CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";
        CREATE STREAM cheap AS SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8;
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM cheap;
        RESUME SOURCE src;
    """)
    # the executors' interpreter, named by spark.pyspark.python: the venv's python, recording where it ran
    # (an executor's Python workers run in the worker's work/<app>/<executor>/ folder)
    ran_in = tmp_path / "python-ran-in.txt"
    python = tmp_path / "executor-python"
    python.write_text(f'#!/bin/sh\necho "$PWD" >> "{ran_in}"\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    port = free_port()
    cfg = tmp_path / "sensorbee.yaml"
    cfg.write_text(
        f"network:\n  listen_on: '127.0.0.1:{port}'\n"
        "logging:\n  min_log_level: info\n"
        "topologies:\n  t:\n    bql_file: t.bql\n"
        "spark:\n"
        f"  master: '{cluster.url}'\n"
        "  data_dir: data\n"
        "  warm_up: false\n"
        f"  conf:\n    spark.pyspark.python: '{python}'\n")
    api = f"http://127.0.0.1:{port}/api/v1"
    log = tmp_path / "sbpy.log"
    started = time.monotonic()
    with open(log, "wb") as logf:
        proc = subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", str(cfg)],
                                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=cluster_env(), cwd=tmp_path, start_new_session=True)
    try:
        try:
            state = wait_for(
                lambda: httpx.get(f"{api}/topologies/t/streams/cheap", timeout=5).json()["stream"]["state"]
                == "stopped", 240, proc, "the stream to finish")
            assert state
            sink = httpx.get(f"{api}/topologies/t/sinks/k", timeout=5).json()["sink"]
            apps = [a for a in cluster.apps() if a.get("name") == "sbpy"]
        except BaseException:
            print(f"--- sbpy run log\n{log.read_text(errors='replace')[-6000:]}")
            print(cluster.logs())
            print(cluster.executor_logs())
            raise
        elapsed = time.monotonic() - started
    finally:
        stop_server(proc)

    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert got == EXPECTED
    assert sink["status"]["input_stats"]["num_received_total"] == len(EXPECTED)
    # the query ran on the cluster: the master registered the application and the worker ran an executor
    assert len(apps) == 1, cluster.state()
    assert apps[0]["id"].startswith("app-"), apps
    print(json.dumps(apps[0]))
    executor_dirs = list((cluster.work_dir / apps[0]["id"]).glob("*/stderr"))
    assert executor_dirs, cluster.executor_logs()
    dirs = ran_in.read_text().split() if ran_in.exists() else []
    assert any(d.startswith(str(cluster.work_dir / apps[0]["id"])) for d in dirs), dirs
    # the server's shutdown stopped the session: the master lists the application as finished
    deadline = time.monotonic() + 30
    while not any(a["id"] == apps[0]["id"] for a in (cluster.state() or {}).get("completedapps", [])):
        assert time.monotonic() < deadline, cluster.state()
        time.sleep(0.5)
    print(f"cluster topology finished in {elapsed:.1f} s")


def test_cluster_with_two_workers_registers_both_and_stops_them(tmp_path):
    """B6's scale-out form: one master, two one-core workers; ``stop()`` leaves no JVM of them behind."""
    cluster = StandaloneCluster(tmp_path / "cluster2", cores=1, memory="512m", workers=2)
    with cluster:
        workers = [w for w in (cluster.state() or {}).get("workers", []) if w.get("state") == "ALIVE"]
        assert len(workers) == 2, cluster.state()
        assert [w["cores"] for w in workers] == [1, 1]
        assert len({w["id"] for w in workers}) == 2
        procs = [cluster.master, *cluster.workers]
    assert all(p is not None and p.poll() is not None for p in procs)
