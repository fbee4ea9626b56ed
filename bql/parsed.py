"""ParsedStatement: one statement of a script with the text it came from."""
from __future__ import annotations

from dataclasses import dataclass

from .ast import Statement


@dataclass(frozen=True)
class ParsedStatement:
    """A statement node, its own source text (without the ``;``) and its offset in the script."""

    stmt: Statement
    text: str
    offset: int = 0
