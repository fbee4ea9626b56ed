"""``examples/my_plugin``, installed as a distribution, is found by a server through the ``sbpy.plugins``
entry-point group: no ``plugins:`` entry in the config and no change to sbpy's code.

Installing into a throwaway environment needs a build backend (``pip install --target`` builds a wheel
with setuptools>=68 and ``wheel``); when this machine cannot build offline the pip test is skipped and
the other test lays out exactly what pip would install: the package plus a ``.dist-info`` folder whose
``entry_points.txt`` comes from the project's ``pyproject.toml``. Both start real ``sbpy`` processes with
only ``PYTHONPATH`` pointing at the installation."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
from loopback import free_port

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "examples" / "my_plugin"


def fake_install(site: Path) -> None:
    """The files ``pip install --target site examples/my_plugin`` creates (package + dist-info)."""
    meta = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    shutil.copytree(PROJECT / "my_plugin", site / "my_plugin")
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n")
    lines = []
    for group, entries in meta["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{k} = {v}" for k, v in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    (info / "RECORD").write_text("")


def env_with(site: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(site) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def sbpy(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120)



def check_discovered(site: Path, tmp_path: Path) -> None:
    env = env_with(site)
    listed = sbpy("plugins", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert "my_plugin" in doc["entry_points"] and doc["errors"] == {}
    names = {(c["kind"], c["name"]) for c in doc["components"]}
    assert {("udf", "my_plugin_reverse"), ("uds_type", "my_plugin_histogram"),
            ("sink_type", "my_plugin_memory")} <= names
    # without the installation nothing of it is there
    bare = json.loads(sbpy("plugins", "--json", env=dict(os.environ)).stdout)
    assert "my_plugin" not in bare["entry_points"]
    # a server started with a config that does not mention the plugin uses it from BQL
    port = free_port()
    cfg = tmp_path / "sb.yaml"
    cfg.write_text(f"network:\n  listen_on: '127.0.0.1:{port}'\nspark:\n  warm_up: false\n  data_dir: data\n"
                   "logging:\n  min_log_level: warn\ntopologies:\n  t:\n")
    proc = subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", str(cfg)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/api/v1/topologies/t/queries"
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.post(url, json={"queries": 'EVAL my_plugin_reverse("abc");'}, timeout=5)
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert r.status_code == 200 and r.json()["result"] == "cba"
        r = httpx.post(url, json={"queries": 'CREATE STATE h TYPE my_plugin_histogram WITH field = "w";'
                                             'CREATE SINK m TYPE my_plugin_memory WITH limit = 3;'}, timeout=10)
        assert r.status_code == 200, r.text
        r = httpx.post(url, json={"queries": 'EVAL my_plugin_count("h", "x");'}, timeout=10)
        assert r.json()["result"] == 0
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def test_entry_point_metadata_plugin_is_discovered(tmp_path):
    site = tmp_path / "site"
    fake_install(site)
    check_discovered(site, tmp_path)


def test_pip_installed_plugin_is_discovered(tmp_path):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                        "--no-build-isolation", "--target", str(site), str(PROJECT)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, f"pip install ./examples/my_plugin failed (dev extras bring setuptools>=68, wheel):\n{r.stderr}"
    check_discovered(site, tmp_path)
