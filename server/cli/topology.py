"""``sbpy topology`` (alias ``t``): create, drop and list topologies through the REST API.

``sbpy topology create NAME`` (``t c``), ``sbpy topology drop NAME`` (succeeds if it does not
exist), ``sbpy topology list`` (``t l``, one name per line).
"""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .options import add_client_options

if TYPE_CHECKING:
    from .client import ApiClient

__all__ = ["add_client_options", "register", "run"]  # add_client_options: shared with ``sbpy shell``


def _create(client: ApiClient, args: argparse.Namespace) -> None:
    client.create_topology(args.name)


def _drop(client: ApiClient, args: argparse.Namespace) -> None:
    client.drop_topology(args.name)


def _list(client: ApiClient, args: argparse.Namespace) -> None:
    for name in sorted(client.list_topologies(), key=str.lower):
        print(name)


def run(args: argparse.Namespace) -> int:
    """Run the chosen subcommand; 0 on success, 1 with ``request failed: CODE: message`` otherwise."""
    from .client import ApiClient, RequestFailed

    with ApiClient(args.uri, args.api_version) as client:
        try:
            args.action(client, args)
        except RequestFailed as err:
            detail = f"{err.code}: {err.message}" if err.code else err.message
            if err.meta:
                detail += f": {err.meta}"
            print(f"request failed: {detail}", file=sys.stderr)
            return 1
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``topology`` (alias ``t``) and its subcommands."""
    parser = subparsers.add_parser("topology", aliases=["t"], help="create, drop or list topologies")
    commands = parser.add_subparsers(dest="topology_command", metavar="{create,drop,list}", required=True)
    for name, aliases, action, help_ in (
        ("create", ["c"], _create, "create a topology"),
        ("drop", [], _drop, "drop a topology (succeeds if it does not exist)"),
        ("list", ["l"], _list, "print the topologies, one per line"),
    ):
        sub = commands.add_parser(name, aliases=aliases, help=help_)
        if action is not _list:
            sub.add_argument("name", help="the topology's name")
        add_client_options(sub)
        sub.set_defaults(func=run, action=action)
