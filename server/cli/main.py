"""``sbpy``: the command line entry point; each subcommand lives in its own module.

Every subcommand module exposes ``register(subparsers)``, adding its parser with a ``func`` that
takes the parsed arguments and returns the exit code. Only the module of the subcommand being run
is imported (``sbpy check`` starts in a fraction of a second); ``sbpy --help`` and unknown words
import them all and also the subcommands of installed packages (``sbpy.server.cli.plugin_commands``).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

import sbpy

from .help_texts import MAIN, add_examples
from .plugin_commands import register_plugin_commands

SUBCOMMANDS = ("run", "runfile", "shell", "topology", "check", "plugins")
ALIASES = {"t": "topology", "bql": "shell"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``sbpy`` parser: with only ``command``'s subcommand when it names a built-in one, else
    with every built-in and plugin subcommand."""
    parser = argparse.ArgumentParser(
        prog="sbpy", description="A SensorBee-compatible BQL server on Spark Structured Streaming.",
        epilog=MAIN, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-v", "--version", action="version", version=f"sbpy {sbpy.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    builtin = ALIASES.get(command or "", command)
    names = (builtin,) if builtin in SUBCOMMANDS else SUBCOMMANDS
    for name in names:
        module = importlib.import_module(f"sbpy.server.cli.{name}")
        module.register(subparsers)
    add_examples(subparsers)
    if builtin not in SUBCOMMANDS:
        register_plugin_commands(subparsers)
    return parser


def command_word(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (``sbpy`` itself has
    only ``-h`` and ``-v``, which take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the subcommand; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command_word(argv))
    args = parser.parse_args(argv)
    func = vars(args).get("func")
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
