"""``sbpy run``: a real process on a free loopback port; clean start, requests, shutdown."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import httpx
from loopback import free_port



def start(config_file) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", str(config_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_run_serves_config_topologies_and_stops(tmp_path):
    port = free_port()
    (tmp_path / "t.bql").write_text("-- nothing yet\n")
    cfg = tmp_path / "sb.yaml"
    cfg.write_text(f"network:\n  listen_on: '127.0.0.1:{port}'\ntopologies:\n  pre:\n    bql_file: t.bql\n"
                   f"logging:\n  min_log_level: warn\nspark:\n  warm_up: false\n")
    proc = start(cfg)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/api/v1/topologies", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert r.json() == {"topologies": [{"name": "pre"}]}
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode in (0, 130)  # uvicorn re-raises SIGINT after its graceful shutdown
    assert "Traceback" not in err


def test_run_rejects_bad_config_and_failing_bql_file(tmp_path):
    cfg = tmp_path / "sb.yaml"
    cfg.write_text("network:\n  listen: x\n")
    proc = subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", str(cfg)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "unknown key 'listen' in section 'network'" in proc.stderr
    (tmp_path / "t.bql").write_text("CREATE SOURCE from TYPE dummy;\n")
    cfg.write_text(f"network:\n  listen_on: '127.0.0.1:{free_port()}'\n"
                   "topologies:\n  t:\n    bql_file: t.bql\n")
    proc = subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", str(cfg)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "statement at line 1 failed: 'from' is a reserved word" in proc.stderr
