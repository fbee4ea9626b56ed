"""``sbpy check --topology T [--uri URI]``: names also resolve against a running topology's nodes
(REST ``GET /topologies/T/sources|streams|sinks``); ``$SBPY_URI`` is the default ``--uri``."""
from __future__ import annotations

import pytest

from sbpy.server.cli.main import main

SCRIPT = """\
CREATE STREAM s AS SELECT RSTREAM * FROM stats [RANGE 1 TUPLES];
INSERT INTO printer FROM s;
SELECT RSTREAM * FROM statz [RANGE 1 TUPLES];
CREATE SINK printer TYPE stdout;
SAVE STATE model;
"""


@pytest.fixture
def topology(server):
    """Topology ``t`` with the source ``stats`` and the sink ``printer`` (no query: Spark never starts)."""
    with server.client() as c:
        assert c.post("/topologies", json={"name": "t"}).status_code == 200
        r = c.post("/topologies/t/queries", json={
            "queries": "CREATE SOURCE stats TYPE node_statuses; CREATE SINK printer TYPE stdout;"})
        assert r.status_code == 200, r.text
    return server


def heads(out: str) -> list[str]:
    return [line.split(":", 1)[1] for line in out.splitlines() if not line.startswith("    ")]


def test_names_resolve_against_the_topology(tmp_path, capsys, topology):
    f = tmp_path / "more.bql"
    f.write_text(SCRIPT)
    assert main(["check", "-t", "t", "--uri", topology.url, str(f)]) == 1
    assert heads(capsys.readouterr().out) == [
        "3:23: stream 'statz' was not found (did you mean 'stats'?)",
        "4:13: sink 'printer' already exists",
        "5:12: warning: state 'model' is not created by this script (the server's states cannot be listed)",
    ]


def test_without_the_topology_its_nodes_are_unknown(tmp_path, capsys):
    f = tmp_path / "more.bql"
    f.write_text(SCRIPT)
    assert main(["check", str(f)]) == 1
    out = heads(capsys.readouterr().out)
    assert out[:2] == ["1:42: stream 'stats' was not found", "2:13: sink 'printer' was not found"]
    assert "5:12: state 'model' was not found" in out


def test_the_uri_comes_from_sbpy_uri(tmp_path, capsys, monkeypatch, topology):
    f = tmp_path / "ok.bql"
    f.write_text("CREATE STREAM s AS SELECT RSTREAM * FROM stats [RANGE 1 TUPLES];\nINSERT INTO printer FROM s;\n")
    monkeypatch.setenv("SBPY_URI", topology.url)
    assert main(["check", "-t", "t", str(f)]) == 0
    assert capsys.readouterr().out == ""


def test_stdin_with_a_topology_is_resolved(capsys, monkeypatch, topology):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.StringIO("SELECT RSTREAM * FROM stats [RANGE 1 TUPLES];"))
    assert main(["check", "-t", "t", "--uri", topology.url, "-"]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO("SELECT RSTREAM * FROM nope [RANGE 1 TUPLES];"))
    assert main(["check", "-t", "t", "--uri", topology.url, "-"]) == 1


def test_an_unknown_topology_or_server_exits_2(tmp_path, capsys, topology):
    f = tmp_path / "ok.bql"
    f.write_text("EVAL 1;")
    assert main(["check", "-t", "nope", "--uri", topology.url, str(f)]) == 2
    assert "cannot read topology 'nope': E0001" in capsys.readouterr().err
    assert main(["check", "-t", "t", "--uri", "http://127.0.0.1:1/", str(f)]) == 2
    assert "cannot reach the server" in capsys.readouterr().err
