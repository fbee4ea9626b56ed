"""``sbpy plugins``: what the server would load (built-ins, entry points, listed modules)."""
from __future__ import annotations

import json
from pathlib import Path

from sbpy.server.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_lists_builtins_and_config_modules(capsys):
    assert main(["plugins", "-c", str(ROOT / "examples" / "sbml" / "sensorbee.yaml"), "--kind", "uds_type"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "sbpy plugin API version 1"
    rows = {tuple(line.split()) for line in out[1:]}
    assert ("uds_type", "jubaclassifier_arow", "sbpy.plugins.examples.jubatus") in rows
    assert ("uds_type", "my_counter", "sbpy.plugins.examples.counter") in rows


def test_json_and_a_module_that_fails(capsys):
    assert main(["plugins", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"kind": "sink_type", "name": "uds", "module": "builtin"} in doc["components"]
    assert main(["plugins", "-m", "no_such_plugin_module"]) == 1
    assert "cannot load plugin 'no_such_plugin_module': ModuleNotFoundError" in capsys.readouterr().err
