"""The evaluation environment (``Env``, one per evaluated row) and the compile-time ``Scope``."""
from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Sequence

from ..runtime.processor import Tuple


class Env:
    """What an expression reads at run time.

    ``tuples`` maps FROM alias (or stream name) → ``Tuple``; ``aggregates`` holds the values of the
    aggregate calls of the current group, indexed by ``Scope.aggregate_slot``; ``now`` is the time when
    processing of the current tuple started (``now()``; None = the wall clock at the call).
    """

    __slots__ = ("tuples", "aggregates", "now")

    def __init__(self, tuples: dict[str, Tuple], aggregates: Sequence[Any] | None = None,
                 now: _dt.datetime | None = None):
        self.tuples = tuples
        self.aggregates = aggregates
        self.now = now

    def __repr__(self) -> str:
        return f"Env(tuples={self.tuples!r}, aggregates={self.aggregates!r})"


NULL_PADDED = Tuple({}, None, 0, "")
"""The row a LEFT JOIN puts on the side that has no match (``runtime/left_join.py``): every field of
it reads NULL (not missing), ``x:*`` is an empty map, ``x:ts()`` is NULL. Compared by identity."""


class Scope:
    """What a compiled expression may refer to.

    ``aliases``: the FROM aliases; an unprefixed field, ``ts()`` or ``*`` refers to the single alias when
    there is exactly one. ``registry``: the function registry (None = built-ins). ``aggregate_slot(call)``
    maps an aggregate ``FunctionCall`` node to its index in ``Env.aggregates`` (None = aggregates are not
    allowed here). ``stream`` False marks an EVAL context (``now()`` is an error there).
    ``extensions`` maps an AST node class to ``compile(node, scope, compile_child) -> f(env)`` for nodes
    the core compiler does not know (the MATCH_RECOGNIZE forms).
    """

    __slots__ = ("aliases", "registry", "aggregate_slot", "stream", "extensions")

    def __init__(self, aliases: tuple[str, ...] = (), registry: Any = None,
                 aggregate_slot: Callable[[Any], int | None] | None = None, stream: bool = True,
                 extensions: dict[type, Callable[..., Any]] | None = None):
        self.aliases = tuple(aliases)
        if registry is None:
            from ..functions import builtin_registry

            registry = builtin_registry()
        self.registry = registry
        self.aggregate_slot = aggregate_slot
        self.stream = stream
        self.extensions = extensions or {}

    def resolve(self, stream: str | None) -> str | None:
        """The alias an (optionally prefixed) reference reads, or None when it cannot be resolved."""
        if stream is not None:
            return stream if stream in self.aliases else None
        if len(self.aliases) == 1:
            return self.aliases[0]
        return None
