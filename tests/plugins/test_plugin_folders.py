"""Plugins discovered from a folder: ``plugins/`` beside the config file (or ``plugin_dirs``), each
``*.py`` module and package in it loaded by the loader, the server and the CLI alike."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sbpy.plugins import PluginRegistries, loader
from sbpy.server.config import config_from_dict, load_config


def unique(prefix: str) -> str:
    """A module name no other test (or run) uses: imported modules stay in ``sys.modules``."""
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def plugin_module(udf_name: str, factor: int, helper: str | None = None) -> str:
    body = f"import {helper}\n" if helper else ""
    value = f"{helper}.BASE * x" if helper else f"{factor} * x"
    return body + f'''
def register(regs):
    regs.add_udf("{udf_name}", lambda x: {value})
'''


def test_folder_specs_lists_modules_and_packages_in_name_order(tmp_path):
    (tmp_path / "b_mod.py").write_text("")
    (tmp_path / "a_pkg").mkdir()
    (tmp_path / "a_pkg" / "__init__.py").write_text("")
    (tmp_path / "no_init").mkdir()
    for skipped in ("_private.py", ".hidden.py", "notes.txt"):
        (tmp_path / skipped).write_text("")
    assert loader.folder_specs(tmp_path) == [str(tmp_path / "a_pkg"), str(tmp_path / "b_mod.py")]
    with pytest.raises(NotADirectoryError):
        loader.folder_specs(tmp_path / "missing")


def test_load_folders_registers_modules_that_import_their_neighbours(tmp_path):
    helper, mod, pkg = unique("helper"), unique("mod"), unique("pkg")
    (tmp_path / f"_{helper}.py").write_text("BASE = 7\n")  # skipped itself, importable by the others
    (tmp_path / f"{mod}.py").write_text(plugin_module(f"{mod}_fn", 0, helper=f"_{helper}"))
    (tmp_path / pkg).mkdir()
    (tmp_path / pkg / "__init__.py").write_text(plugin_module(f"{pkg}_fn", 3))
    regs = PluginRegistries()
    assert loader.load_folders([tmp_path], regs) == [str(tmp_path / mod) + ".py", str(tmp_path / pkg)]
    functions = regs.for_topology("t").functions
    assert functions.lookup(f"{mod}_fn").impl(2) == 14
    assert functions.lookup(f"{pkg}_fn").impl(2) == 6
    assert loader.load_folders([tmp_path], regs)  # loading again is a no-op, not a duplicate


def test_a_module_name_already_taken_or_a_missing_folder_is_an_error(tmp_path):
    (tmp_path / "json.py").write_text(plugin_module("never_registered", 1))
    with pytest.raises(loader.PluginLoadError, match="the module name 'json' is already taken"):
        loader.load_folders([tmp_path], PluginRegistries())
    with pytest.raises(loader.PluginLoadError, match="is not a folder"):
        loader.load_folders([tmp_path / "nope"], PluginRegistries())


def test_config_defaults_to_the_plugins_folder_beside_the_config(tmp_path):
    config_file = tmp_path / "sensorbee.yaml"
    config_file.write_text("plugins: []\n")
    assert load_config(config_file).plugin_folders == []  # no such folder: nothing to load
    (tmp_path / "plugins").mkdir()
    assert load_config(config_file).plugin_folders == [tmp_path / "plugins"]
    config_file.write_text("plugin_dirs: [extra, /abs/dir]\n")
    assert load_config(config_file).plugin_folders == [tmp_path / "extra", Path("/abs/dir")]
    assert config_from_dict({}).plugin_folders == []  # no config file: no folder beside it


def test_server_loads_the_plugins_folder_beside_its_config(server_factory, tmp_path):
    name = unique("folder_udf")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / f"{name}.py").write_text(
        f"from sbpy.plugins import udf\n\n@udf('{name}')\ndef f(x):\n    return x + 100\n")
    srv = server_factory({}, source_path=tmp_path / "sensorbee.yaml")
    with srv.client() as c:
        assert c.post("/topologies", json={"name": "t"}).status_code == 200
        r = c.post("/topologies/t/queries", json={"queries": f"EVAL {name}(1);"})
    assert r.status_code == 200, r.text
    assert r.json() == {"result": 101}
    assert str(tmp_path / "plugins" / f"{name}.py") in loader.loaded_plugins()  # what workers load


def test_server_start_fails_naming_a_broken_folder_plugin(tmp_path):
    from sbpy.server.app import load_plugins
    from sbpy.server.manager import StartupError

    (tmp_path / "plugins").mkdir()
    broken = unique("broken")
    (tmp_path / "plugins" / f"{broken}.py").write_text("raise RuntimeError('no luck')\n")
    config = config_from_dict({}, tmp_path / "sensorbee.yaml")
    with pytest.raises(StartupError, match=f"cannot load plugin '.*{broken}.py': RuntimeError: no luck"):
        load_plugins(config)


def test_plugins_command_lists_the_folder_beside_the_config(tmp_path, capsys):
    import argparse
    import json

    from sbpy.server.cli import plugins as cli

    name = unique("listed")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / f"{name}.py").write_text(f"from sbpy.plugins import udf\n\n@udf('{name}')\n"
                                                     "def f(x):\n    return x\n")
    (tmp_path / "sensorbee.yaml").write_text("plugins: []\n")
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["plugins", "-c", str(tmp_path / "sensorbee.yaml"), "--kind", "udf", "--json"])
    assert args.func(args) == 0
    assert name in {r["name"] for r in json.loads(capsys.readouterr().out)["components"]}
