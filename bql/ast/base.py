"""The AST node base: frozen dataclasses with an optional source span that never takes part in equality.

Every node class is a ``@node`` (frozen, slotted, keyword-capable dataclass). ``span`` is keyword-only
and excluded from ``==`` and ``hash`` so that golden tests and rewrites compare structure only.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import Span

T = TypeVar("T")


def node(cls: type[T]) -> type[T]:
    """Class decorator for AST nodes: a frozen dataclass with slots."""
    return dataclass(frozen=True, slots=True)(cls)


@dataclass(frozen=True, slots=True)
class Node:
    """Base of every AST node."""

    span: Span | None = field(default=None, compare=False, repr=False, kw_only=True)

    def children(self) -> Iterator[Node]:
        """Direct child nodes, in field order (tuples of nodes are flattened)."""
        for f in dataclasses.fields(self):
            if f.name == "span":
                continue
            yield from _nodes_in(getattr(self, f.name))

    def walk(self) -> Iterator[Node]:
        """This node and all its descendants, pre-order."""
        yield self
        for child in self.children():
            yield from child.walk()

    def replace(self, **changes: Any) -> Node:
        """A copy with some fields changed (span kept unless given)."""
        return dataclasses.replace(self, **changes)


def _nodes_in(value: Any) -> Iterator[Node]:
    if isinstance(value, Node):
        yield value
    elif isinstance(value, tuple):
        for v in value:
            yield from _nodes_in(v)
