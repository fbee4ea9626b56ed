"""``sbpy plugins``: list the installed plugin components (built-ins, entry points, ``--module``s).

    $ sbpy plugins                      # kind, name and module of every component
    $ sbpy plugins -m sbpy.plugins.examples --kind udf
    $ sbpy plugins --json
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("plugins", help="list installed plugins (UDFs, UDSFs, states, sources, sinks)",
                              description="List the plugin components this server would load.")
    p.add_argument("-m", "--module", action="append", default=[], metavar="MODULE",
                   help="also import this plugin module (repeatable)")
    p.add_argument("-c", "--config", help="also load the 'plugins' modules and plugin folders of this "
                   "sensorbee.yaml")
    p.add_argument("--kind", choices=("udf", "udaf", "udsf", "uds_type", "source_type", "sink_type"),
                   help="only this kind")
    p.add_argument("--json", action="store_true", help="JSON output")
    p.set_defaults(func=run)


def _config_modules(path: str) -> list[str]:
    import yaml

    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f) or {}
    mods = doc.get("plugins") or []
    if not isinstance(mods, list):
        raise ValueError("'plugins' must be a list of module names")
    return [str(m) for m in mods]


def run(args: argparse.Namespace) -> int:
    from sbpy.plugins import API_VERSION
    from sbpy.plugins.loader import (
        PluginLoadError,
        entry_points,
        load_entry_points,
        load_folders,
        load_modules,
    )
    from sbpy.plugins.registry import default_registries
    from sbpy.server.config import ConfigError, load_config

    regs = default_registries()
    errors = {k: v for k, v in load_entry_points(regs).items() if v}
    try:
        modules = list(args.module) + (_config_modules(args.config) if args.config else [])
        load_modules(modules, regs)
        if args.config:
            load_folders(load_config(args.config).plugin_folders, regs)
    except (PluginLoadError, ConfigError, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    rows = [r for r in regs.describe() if args.kind is None or r["kind"] == args.kind]
    if args.json:
        print(json.dumps({"api_version": API_VERSION, "entry_points": [ep.name for ep in entry_points()],
                          "errors": errors, "components": rows}, indent=2))
    else:
        width = max([len(r["name"]) for r in rows] + [4])
        print(f"sbpy plugin API version {API_VERSION}")
        for r in rows:
            print(f"{r['kind']:<12} {r['name']:<{width}}  {r['module']}")
        for name, err in errors.items():
            print(f"error: {err}", file=sys.stderr)
    return 1 if errors else 0
