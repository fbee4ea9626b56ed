"""``sbpy shell`` non-interactive against a test server."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest

from sbpy.server.cli.main import main
from sbpy.server.cli.shell import split_statements


def run_shell(monkeypatch, capsys, server, text: str, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code = main(["shell", "--uri", server.url, *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def srv(server):
    with server.client() as c:
        c.post("/topologies", json={"name": "t"})
    return server


def test_split_statements():
    assert split_statements('EVAL 1; EVAL ";";\n-- x;\nEVAL') == (["EVAL 1;", 'EVAL ";";'], "\n-- x;\nEVAL")


def test_eval_prints_json(monkeypatch, capsys, srv):
    code, out, err = run_shell(monkeypatch, capsys, srv, "EVAL 1+1;\nEVAL 1.5 *\n 2;\n-- comment\n", "-t", "t")
    assert (code, out, err) == (0, "2\n3.0\n", "")


def test_use_and_exit(monkeypatch, capsys, srv):
    code, out, _ = run_shell(monkeypatch, capsys, srv, "USE t;\nEVAL \"a\";\nexit\nEVAL 2;\n")
    assert (code, out) == (0, '"a"\n')


def test_parse_error_prints_code_and_caret(monkeypatch, capsys, srv):
    code, out, err = run_shell(monkeypatch, capsys, srv, "EVAL 1 +;\n", "-t", "t")
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert lines[0] == "request failed: E0006: Cannot parse a BQL statement"
    assert "EVAL 1 +;" in lines and "        ^" in lines


def test_analysis_error_prints_snippet(monkeypatch, capsys, srv):
    code, _, err = run_shell(monkeypatch, capsys, srv, "CREATE SOURCE from TYPE dummy;\n", "-t", "t")
    lines = err.splitlines()
    assert code == 1 and lines[0].startswith("request failed: E0007: Cannot process a statement: 'from'")
    assert lines[1:] == ["CREATE SOURCE from TYPE dummy;", "^"]


def test_no_topology_and_unknown_topology(monkeypatch, capsys, srv):
    code, _, err = run_shell(monkeypatch, capsys, srv, "EVAL 1;\n")
    assert code == 1 and "no topology is selected" in err
    code, _, err = run_shell(monkeypatch, capsys, srv, "EVAL 1;\n", "-t", "zz")
    assert err.strip() == "request failed: E0001: The topology doesn't exist"


def test_console_script_pipe(srv):
    proc = subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "shell", "-t", "t", "--uri", srv.url],
                          input="EVAL 1+1;\n", capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "2\n"), proc.stderr


def test_interactive_loop(srv, tmp_path):
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from sbpy.server.cli.client import ApiClient
    from sbpy.server.cli.shell import Shell

    out, err = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe, ApiClient(srv.url) as client:
        pipe.send_text("USE t\rEVAL 1 +\r 2;\rEVAL )\r;\rexit\r")
        shell = Shell(client, None, out, err)
        shell.interactive(history_file=tmp_path / "hist", input=pipe, output=DummyOutput())
    assert shell.topology == "t"
    assert out.getvalue() == "3\n"
    assert err.getvalue().startswith("request failed: E0006")
    assert "EVAL 1 +" in (tmp_path / "hist").read_text()
