"""The command line around the subcommands: ``run --listen``, ``$SBPY_URI``, ``--help`` with examples,
and subcommands of installed packages (the ``sbpy.commands`` entry-point group)."""
from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sbpy.server.cli import run as run_module
from sbpy.server.cli.main import SUBCOMMANDS, build_parser, main
from loopback import free_port as _free_port

# ---------------------------------------------------------------- run --listen


def test_listen_replaces_the_configured_address(tmp_path, monkeypatch):
    (tmp_path / "sb.yaml").write_text("network:\n  listen_on: 127.0.0.1:15601\nplugins: [sbpy.plugins.examples]\n")
    served = []
    monkeypatch.setattr(run_module, "configure_logging", lambda config, fmt=None: None)
    monkeypatch.setattr(run_module, "serve", lambda config: served.append(config) or 0)
    assert main(["run", "-c", str(tmp_path / "sb.yaml"), "--listen", "0.0.0.0:8081"]) == 0
    assert main(["run", "-c", str(tmp_path / "sb.yaml"), "-l", ":9000"]) == 0
    assert main(["run", "-c", str(tmp_path / "sb.yaml")]) == 0
    assert [(c.network.host, c.network.port) for c in served] == [("0.0.0.0", 8081), ("0.0.0.0", 9000),
                                                                  ("127.0.0.1", 15601)]
    assert all(c.plugins == ["sbpy.plugins.examples"] and c.base_dir == tmp_path for c in served)


def test_a_malformed_listen_is_an_error(capsys):
    assert main(["run", "--listen", "localhost"]) == 1
    assert capsys.readouterr().err.strip() == (
        "sbpy run: --listen: listen_on must look like 'host:port' or ':port', got 'localhost'")



def test_a_real_server_listens_where_told(tmp_path):
    configured, listen = _free_port(), _free_port()
    (tmp_path / "sb.yaml").write_text(
        f"network:\n  listen_on: 127.0.0.1:{configured}\nspark:\n  warm_up: false\nlogging:\n  min_log_level: warn\n")
    proc = subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", "sb.yaml",
                             "--listen", f"127.0.0.1:{listen}"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{listen}/api/v1/topologies", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "the server did not start listening"
                time.sleep(0.1)
        assert r.json() == {"topologies": []}
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{configured}/api/v1/topologies", timeout=2)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


# ---------------------------------------------------------------- SBPY_URI


def test_sbpy_uri_is_the_default_of_client_commands(monkeypatch, capsys, server):
    with server.client() as c:
        c.post("/topologies", json={"name": "from_env"})
    monkeypatch.setenv("SBPY_URI", server.url)
    assert main(["topology", "list"]) == 0
    assert capsys.readouterr().out == "from_env\n"
    for argv in (["shell"], ["topology", "list"], ["t", "c", "x"], ["check"]):
        assert build_parser(argv[0]).parse_args(argv).uri == server.url
    monkeypatch.delenv("SBPY_URI")
    assert build_parser("shell").parse_args(["shell"]).uri == "http://127.0.0.1:15601/"
    assert build_parser("shell").parse_args(["shell", "--uri", "http://h:1/"]).uri == "http://h:1/"


# ---------------------------------------------------------------- --help


@pytest.mark.parametrize("command", [*SUBCOMMANDS, "t", "bql"])
def test_every_subcommand_has_examples_in_its_help(capsys, command):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "\nexamples:\n  sbpy " in text
    assert "``" not in text  # no raw RST
    examples = text.split("\nexamples:\n", 1)[1]
    assert all(line.startswith("  ") or not line for line in examples.splitlines()[:2])  # line breaks kept


def test_the_top_level_help_lists_commands_examples_and_the_environment(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for word in (*SUBCOMMANDS, "examples:", "SBPY_URI", "SENSORBEE_CONFIG", "sbpy.commands"):
        assert word in text


def test_only_the_subcommand_run_is_imported():
    code = ("import json, sys; from sbpy.server.cli.main import main; main(['check', '--no-resolve', '/dev/null']);"
            " print(json.dumps(sorted(m for m in sys.modules if m.startswith('sbpy.server.cli.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    loaded = json.loads(out)
    assert "sbpy.server.cli.check" in loaded
    assert not {"sbpy.server.cli.run", "sbpy.server.cli.shell", "sbpy.server.cli.runfile"} & set(loaded)


# ---------------------------------------------------------------- sbpy.commands entry points

PLUGIN = '''\
import argparse


def register(subparsers):
    p = subparsers.add_parser("hello", help="say hello", description="Greets.")
    p.add_argument("--name", default="world")
    p.set_defaults(func=lambda args: print(f"hello {args.name}") or 3)


def broken(subparsers):
    raise RuntimeError("this plugin is broken")


def takes_check(subparsers):
    subparsers.add_parser("check")
'''


@pytest.fixture
def fake_distribution(tmp_path, monkeypatch) -> Path:
    """An installed distribution (a dist-info folder on sys.path) with three ``sbpy.commands``."""
    (tmp_path / "sbpy_fake_cmd.py").write_text(PLUGIN)
    info = tmp_path / "sbpy_fake_cmd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sbpy-fake-cmd\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[sbpy.commands]\nhello = sbpy_fake_cmd:register\nbroken = sbpy_fake_cmd:broken\n"
        "check = sbpy_fake_cmd:takes_check\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    return tmp_path


def test_a_package_adds_a_subcommand(fake_distribution, capsys):
    assert main(["hello", "--name", "bql"]) == 3
    captured = capsys.readouterr()
    assert captured.out == "hello bql\n"
    assert "cannot load the plugin command 'broken' (sbpy_fake_cmd:broken): RuntimeError: this plugin is broken" \
        in captured.err
    assert "the plugin command 'check' (sbpy_fake_cmd:takes_check) is ignored" in captured.err


def test_plugin_subcommands_are_listed_in_the_help(fake_distribution, capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "hello" in capsys.readouterr().out


def test_builtin_commands_do_not_load_plugins(fake_distribution, capsys):
    assert main(["check", "--no-resolve", "/dev/null"]) == 0
    assert capsys.readouterr().err == ""


def test_a_plugin_subcommand_in_a_new_process(fake_distribution):
    proc = subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "hello"], capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(fake_distribution), "PATH": "/usr/bin:/bin"})
    assert (proc.returncode, proc.stdout) == (3, "hello world\n"), proc.stderr



def test_serving_shortens_the_gil_switch_interval(monkeypatch):
    """The server's REST handlers share the GIL with driver-side stages: ``serve`` sets 1 ms slices."""
    import uvicorn

    from sbpy.server.config import load_config

    class Stub:
        started = True

        def __init__(self, config):
            pass

        def run(self):
            seen.append(sys.getswitchinterval())

    seen = []
    before = sys.getswitchinterval()
    monkeypatch.setattr(uvicorn, "Server", Stub)
    monkeypatch.setattr(uvicorn, "Config", lambda *a, **k: None)
    monkeypatch.setattr("sbpy.server.app.create_app", lambda config, warm_up=True: None)
    try:
        sys.setswitchinterval(0.005)
        assert run_module.serve(load_config(None)) == 0
        assert seen == [pytest.approx(run_module.SWITCH_INTERVAL_S)] and run_module.SWITCH_INTERVAL_S == 0.001
    finally:
        sys.setswitchinterval(before)
