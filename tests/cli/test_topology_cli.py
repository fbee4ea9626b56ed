"""``sbpy topology create|drop|list`` (and aliases) against a test server."""
from __future__ import annotations

from sbpy.server.cli.main import main


def test_create_list_drop(capsys, server):
    uri = ["--uri", server.url]
    assert main(["topology", "create", "b1", *uri]) == 0
    assert main(["t", "c", "a1", *uri]) == 0
    capsys.readouterr()
    assert main(["t", "l", *uri]) == 0
    assert capsys.readouterr().out == "a1\nb1\n"
    assert main(["topology", "create", "A1", *uri]) == 1
    assert "request failed: E0005" in capsys.readouterr().err
    assert main(["topology", "drop", "a1", *uri]) == 0
    assert main(["t", "drop", "a1", *uri]) == 0  # missing: still fine
    capsys.readouterr()
    main(["topology", "list", *uri])
    assert capsys.readouterr().out == "b1\n"


def test_unreachable_server(capsys):
    assert main(["topology", "list", "--uri", "http://127.0.0.1:1/"]) == 1
    assert "cannot reach the server" in capsys.readouterr().err
