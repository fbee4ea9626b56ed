"""Plugin discovery: module lists, entry points, the ``sbpy plugins`` command."""
from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import sys
import types

import pytest

from sbpy.plugins import PluginRegistries
from sbpy.plugins import loader


@pytest.fixture
def fake_module(monkeypatch):
    mod = types.ModuleType("sbpy_test_plugin_mod")

    def register(regs):
        regs.add_udf("from_fake", lambda: 1)

    mod.register = register
    monkeypatch.setitem(sys.modules, "sbpy_test_plugin_mod", mod)
    return mod


def test_load_modules_calls_register_for_other_registries(fake_module):
    regs = PluginRegistries()
    assert loader.load_modules(["sbpy_test_plugin_mod"], regs) == ["sbpy_test_plugin_mod"]
    assert "from_fake" in regs.udfs
    loader.load_modules(["sbpy_test_plugin_mod"], regs)  # loading twice is a no-op


def test_module_colon_function(fake_module):
    regs = PluginRegistries()
    loader.load_modules(["sbpy_test_plugin_mod:register"], regs)
    assert "from_fake" in regs.udfs


def test_failing_module_is_named():
    with pytest.raises(loader.PluginLoadError, match="cannot load plugin 'no_such_module_xyz': ModuleNotFoundError"):
        loader.load_modules(["no_such_module_xyz"], PluginRegistries())


def test_entry_points(monkeypatch, fake_module):
    good = md.EntryPoint("good", "sbpy_test_plugin_mod:register", loader.GROUP)
    bad = md.EntryPoint("bad", "no_such_module_xyz", loader.GROUP)
    monkeypatch.setattr(loader.md, "entry_points", lambda group: [good, bad] if group == loader.GROUP else [])
    regs = PluginRegistries()
    result = loader.load_entry_points(regs)
    assert result["good"] is None and "cannot load plugin 'bad'" in result["bad"]
    assert "from_fake" in regs.udfs
    with pytest.raises(loader.PluginLoadError):
        loader.load_entry_points(PluginRegistries(), strict=True)


def test_cli_lists_components(capsys):
    from sbpy.server.cli import plugins as cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["plugins", "-m", "sbpy.plugins.examples", "--kind", "uds_type", "--json"])
    assert args.func(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["api_version"] == 1
    assert {r["name"] for r in doc["components"]} >= {"my_counter", "jubaclassifier_arow"}
    args = parser.parse_args(["plugins", "-m", "no_such_module_xyz"])
    assert args.func(args) == 1
    assert "cannot load plugin" in capsys.readouterr().err
