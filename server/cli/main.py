"""``sbpy``: the command line entry point; each subcommand lives in its own module.

Every subcommand module exposes ``register(subparsers)``, adding its parser with a ``func`` that
takes the parsed arguments and returns the exit code.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

import sbpy

SUBCOMMANDS = ("run", "runfile", "shell", "topology", "check", "plugins")


def build_parser() -> argparse.ArgumentParser:
    """The ``sbpy`` parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="sbpy", description="A SensorBee-compatible BQL server on Spark Structured Streaming.")
    parser.add_argument("-v", "--version", action="version", version=f"sbpy {sbpy.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"sbpy.server.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
