"""Options shared by the client subcommands (``shell``, ``topology``, ``check --topology``).

``--uri`` defaults to ``$SBPY_URI``, else ``http://127.0.0.1:15601/``; the variable is read when the
parser is built, so ``SBPY_URI=http://host:15601/ sbpy shell -t t`` needs no flag. This module
imports no HTTP client: building the parser stays cheap.
"""
from __future__ import annotations

import argparse
import os

DEFAULT_URI = "http://127.0.0.1:15601/"
URI_ENV = "SBPY_URI"


def default_uri() -> str:
    """``$SBPY_URI`` when set and not empty, else ``DEFAULT_URI``."""
    return os.environ.get(URI_ENV) or DEFAULT_URI


def add_client_options(parser: argparse.ArgumentParser) -> None:
    """``--uri`` and ``--api-version``."""
    parser.add_argument("--uri", default=default_uri(),
                        help=f"the server's address (default: ${URI_ENV} if set, else {DEFAULT_URI})")
    parser.add_argument("--api-version", default="v1", help="the REST API version (default v1)")
