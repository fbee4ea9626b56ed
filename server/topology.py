"""A topology: named sources, streams, sinks and states, and the statements that built them.

This module defines the interface the REST layer and CLI use. The runtime work (issue 3) fills in
node execution on Spark; until then every statement other than EVAL is refused with
"... is not supported yet" (E0007), never silently accepted.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sbpy.bql import ast
from sbpy.bql.parsed import ParsedStatement
from sbpy.bql.errors import BQLExecutionError, UnsupportedFeatureError


class SelectCursor:
    """The tuples of an ad-hoc SELECT, as JSON-ready dicts, until the query ends or ``close()``."""

    def __iter__(self) -> Iterator[dict[str, Any]]:  # pragma: no cover - interface
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class Topology:
    """One named topology. Thread-safe: REST handlers call it from a thread pool."""

    def __init__(self, name: str, context: Any = None):
        self.name = name
        self.context = context

    def execute(self, parsed: ParsedStatement) -> dict[str, Any]:
        """Run one non-SELECT statement; EVAL answers ``{"result": value}``."""
        stmt = parsed.stmt
        if isinstance(stmt, ast.Eval):
            from sbpy.bql.eval import evaluate_constant

            return {"result": evaluate_constant(stmt.expr, on=stmt.on)}
        raise UnsupportedFeatureError(f"{type(stmt).__name__} is not supported yet", stmt.span)

    def select(self, parsed: ParsedStatement) -> SelectCursor:
        raise UnsupportedFeatureError("SELECT is not supported yet", parsed.stmt.span)

    def list_nodes(self, kind: str) -> list[dict[str, Any]]:
        """``kind`` is source, stream or sink: ``[{"node_type", "name", "state"}]``."""
        return []

    def node(self, kind: str, name: str) -> dict[str, Any]:
        """The node's REST view ``{"node_type", "name", "state", "status", ["meta"]}``."""
        raise BQLExecutionError(f"{kind} '{name}' was not found")

    def stop(self) -> None:
        """Stop every node and Spark query of this topology (sinks are flushed)."""
