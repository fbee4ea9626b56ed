"""Names of created nodes: a source, stream, sink or state may not be named with a reserved word, nor
with more than 127 characters (SensorBee's core.ValidateSymbol). A SAVE/LOAD STATE tag obeys the same
rule unless it is ``default`` (bql/udf/uds_storage.go: "tag is ill-formatted").

Only names being created are checked (CREATE SOURCE/STREAM/SINK/STATE, LOAD STATE); reading an
existing node in FROM or INSERT INTO is fine, and field selectors may use any word.
"""
from __future__ import annotations

from ..ast import CreateSink, CreateSource, CreateState, CreateStreamAsSelect, LoadState, SaveState, Statement
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


MAX_NAME_LENGTH = 127


def check_node_name(stmt: Statement, ctx: Context) -> None:
    """A created node's name must not be a reserved word nor longer than 127 characters; neither may a
    state's tag other than ``default``."""
    if isinstance(stmt, (SaveState, LoadState)) and stmt.tag is not None and stmt.tag.lower() != "default":
        _check_symbol(stmt.tag, "tag", stmt)
    kind = _KINDS.get(type(stmt))
    if kind is None:
        return
    _check_symbol(stmt.name, f"{kind} name", stmt)  # type: ignore[attr-defined]


def _check_symbol(name: str, what: str, stmt: Statement) -> None:
    if is_reserved(name):
        raise fail(f"'{name}' is a reserved word and cannot be used as a {what}", stmt)
    if len(name) > MAX_NAME_LENGTH:
        raise fail(f"a {what} can be at most {MAX_NAME_LENGTH} characters long, not {len(name)}", stmt)
