"""Subcommands provided by installed packages: the ``sbpy.commands`` entry-point group.

An entry point's name is the subcommand's name; its object is ``register(subparsers)`` (or a module
with such a function) that adds that subcommand the way sbpy's own modules do, with a ``func`` that
takes the parsed arguments and returns the exit code::

    [project.entry-points."sbpy.commands"]
    export = "my_plugin.cli:register"      # sbpy export ...

A name that a built-in subcommand already has is ignored, and a plugin that fails to load is
reported on stderr without breaking the other subcommands.
"""
from __future__ import annotations

import argparse
import importlib.metadata as md
import sys
import types
from typing import TextIO

GROUP = "sbpy.commands"


def command_entry_points() -> list[md.EntryPoint]:
    """The installed entry points of the ``sbpy.commands`` group, sorted by name."""
    return sorted(md.entry_points(group=GROUP), key=lambda ep: ep.name)


def register_plugin_commands(subparsers: argparse._SubParsersAction, err: TextIO | None = None) -> list[str]:
    """Add every plugin subcommand to ``subparsers``; returns the names added."""
    err = err or sys.stderr
    added = []
    for ep in command_entry_points():
        if ep.name in subparsers.choices:
            print(f"sbpy: the plugin command '{ep.name}' ({ep.value}) is ignored: "
                  "a built-in command has that name", file=err)
            continue
        try:
            target = ep.load()
            register = target.register if isinstance(target, types.ModuleType) else target
            register(subparsers)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the CLI
            print(f"sbpy: cannot load the plugin command '{ep.name}' ({ep.value}): "
                  f"{type(exc).__name__}: {exc}", file=err)
            continue
        if ep.name not in subparsers.choices:
            print(f"sbpy: the plugin command '{ep.name}' ({ep.value}) added no subcommand of that name",
                  file=err)
            continue
        added.append(ep.name)
    return added
