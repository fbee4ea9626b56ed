"""Shared helpers of the parse-tree → AST transformer: spans from lark positions and static errors.

``StaticSyntaxError`` is raised by transformer rules for errors the grammar cannot express (an int
literal outside int64, a zero slice step, an unknown type name ...); ``bql/parser.py`` turns it into
a ``BQLSyntaxError`` with SensorBee's message layout.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from lark import Token

from .ast import Node
from .errors import Span

INT64_MAX = 2**63 - 1


class StaticSyntaxError(Exception):
    """A syntax error found while building the AST; ``span`` locates the offending text."""

    def __init__(self, reason: str, span: Span | None):
        super().__init__(reason)
        self.reason = reason
        self.span = span


def span_of(item: Any) -> Span | None:
    """The Span of a lark Token, a lark Meta, or an AST node (None if unknown)."""
    if isinstance(item, Token):
        if item.start_pos is None:
            return None
        return Span(item.start_pos, item.end_pos, item.line, item.column)
    if isinstance(item, Node):
        return item.span
    if getattr(item, "empty", True):
        return None
    return Span(item.start_pos, item.end_pos, item.line, item.column)


def fail(reason: str, at: Any) -> StaticSyntaxError:
    """A StaticSyntaxError located at a token, meta or node (raise the result)."""
    return StaticSyntaxError(reason, span_of(at))


def ident(tok: Token) -> str:
    """A node-name identifier: case-insensitive, stored lower-case."""
    return str(tok).lower()


def present(items: list[Any]) -> list[Any]:
    """The children that are not placeholders (lark puts None for a missing ``[optional]``)."""
    return [c for c in items if c is not None]


def unique_settings(settings: tuple[Any, ...], what: str) -> tuple[Any, ...]:
    """``settings`` (``MatchSetting`` nodes) unchanged, or a syntax error at the first name given twice
    (``"<what> '<name>' is given more than once"``)."""
    names = [s.name for s in settings]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise fail(f"{what} '{name}' is given more than once", settings[i])
    return settings


def rewrite(value: Any, fn: Callable[[Node], Node | None]) -> Any:
    """Rebuild ``value`` bottom-up, replacing every node ``n`` for which ``fn(n)`` is not None.

    Tuples are rebuilt element-wise; spans are kept.
    """
    if isinstance(value, tuple):
        return tuple(rewrite(v, fn) for v in value)
    if not isinstance(value, Node):
        return value
    changes = {}
    for f in dataclasses.fields(value):
        if f.name == "span":
            continue
        old = getattr(value, f.name)
        new = rewrite(old, fn)
        if new is not old:
            changes[f.name] = new
    if changes:
        value = dataclasses.replace(value, **changes)
    replaced = fn(value)
    return value if replaced is None else replaced
