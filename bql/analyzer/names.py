"""Names of created nodes: a source, stream, sink or state may not be named with a reserved word.

Only names being created are checked (CREATE SOURCE/STREAM/SINK/STATE, LOAD STATE); reading an
existing node in FROM or INSERT INTO is fine, and field selectors may use any word.
"""
from __future__ import annotations

from ..ast import CreateSink, CreateSource, CreateState, CreateStreamAsSelect, LoadState, Statement
from .context import Context, fail
from .reserved import RESERVED_WORDS

_KINDS = {
    CreateSource: "source",
    CreateSink: "sink",
    CreateState: "state",
    CreateStreamAsSelect: "stream",
    LoadState: "state",
}


def is_reserved(name: str) -> bool:
    """True if ``name`` is one of SensorBee's reserved words (case-insensitive)."""
    return name.lower() in RESERVED_WORDS


def check_node_name(stmt: Statement, ctx: Context) -> None:
    """A created node's name must not be a reserved word."""
    kind = _KINDS.get(type(stmt))
    if kind is None:
        return
    name = stmt.name  # type: ignore[attr-defined]
    if is_reserved(name):
        raise fail(f"'{name}' is a reserved word and cannot be used as a {kind} name", stmt)
