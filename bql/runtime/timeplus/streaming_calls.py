"""Proton's stateful streaming functions in the Timeplus window operator: ``lag`` and ``emit_version``.

``lag(x[, n[, default]])`` (non-aggregating queries; the analyzer checks where it may stand): the value
of ``x`` on the ``n``-th previous row of this query — rows in output order, counting every row the
query produced after WHERE (each window row of a ``hop`` is a row; rows that OFFSET skips count too);
``n`` defaults to 1. While fewer than ``n`` rows came before, the result is ``default``, evaluated on
the current row, or without it Proton's default of the value's type: ``0`` for an int, ``0.0`` for a
float, ``""`` for a string, ``false`` for a bool and NULL otherwise (NULL, arrays, maps, ...).

``emit_version()`` (aggregating queries): the number of the emission the row belongs to — 0 for the
first emission that produced rows, then 1, 2, ...; every row of one emission (a window closing, one
ON UPDATE step, one PERIODIC tick, the end-of-input flush) carries the same number.

Each ``lag`` call site becomes a call of a private function ``__lag_value(i)`` (an identifier no user can
write), and ``emit_version`` is replaced in a registry of the query's own: both read this object's
state, which the operator sets before it evaluates a row and commits after (``prepare`` / ``commit``),
so a row that fails leaves no trace. The state is part of the operator's snapshot.
"""
from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any

from ...ast import FunctionCall, Literal, Select
from ...eval import Env, Scope, compile_expr
from ...functions import FunctionSpec, builtin_registry
from ...transform_base import rewrite

LAG_VALUE = "__lag_value"


def type_default(value: Any) -> Any:
    """Proton's default of ``value``'s type (what ``lag`` gives before enough rows came)."""
    t = type(value)
    if t is bool:
        return False
    if t is int:
        return 0
    if t is float:
        return 0.0
    if t is str:
        return ""
    return None


class _LagSite:
    __slots__ = ("x", "n", "default", "history")

    def __init__(self, x, n: int, default):
        self.x = x
        self.n = n
        self.default = default
        self.history: deque = deque(maxlen=n)


def uses_streaming_calls(select: Select) -> bool:
    """Whether ``select`` calls ``lag`` or ``emit_version`` anywhere in its select list or HAVING."""
    found = []

    def visit(node):
        if isinstance(node, FunctionCall) and node.name in ("lag", "emit_version"):
            found.append(node)

    rewrite(tuple(p.expr for p in select.projections), visit)
    if select.having is not None:
        rewrite(select.having, visit)
    return bool(found)


class StreamingCalls:
    """The ``lag`` sites and the emission counter of one Timeplus query."""

    def __init__(self, select: Select, registry: Any, alias: str):
        base = registry if registry is not None else builtin_registry()
        self.registry = base.copy()
        self.registry.register(LAG_VALUE, FunctionSpec(LAG_VALUE, self._lag_value, 1, 1, volatile=True),
                               replace=True)
        self.registry.register("emit_version", FunctionSpec(
            "emit_version", self._emit_version, 0, 0, volatile=True, stream_only=True), replace=True)
        self.sites: list[_LagSite] = []
        self._calls: list[FunctionCall] = []
        projections = rewrite(select.projections, self._replace_lag)
        self.select = dataclasses.replace(select, projections=projections)
        scope = Scope((alias,), registry=self.registry)
        for call in self._calls:
            x = compile_expr(call.args[0], scope)
            n = call.args[1].value if len(call.args) > 1 else 1
            default = compile_expr(call.args[2], scope) if len(call.args) > 2 else None
            self.sites.append(_LagSite(x, n, default))
        self.version = 0
        self._current: list[Any] = [None] * len(self.sites)
        self._pending: list[list[Any]] = [[] for _ in self.sites]
        self._produced = False

    def _replace_lag(self, node):
        if isinstance(node, FunctionCall) and node.name == "lag":
            self._calls.append(node)
            return FunctionCall(LAG_VALUE, (Literal(len(self._calls) - 1, span=node.span),), span=node.span)
        return None

    # ------------------------------------------------------------ registry functions

    def _lag_value(self, i: int) -> Any:
        return self._current[i]

    def _emit_version(self) -> int:
        return self.version

    # ------------------------------------------------------------ lag: per row

    def prepare(self, env: Env) -> None:
        """Compute every lag value for the row of ``env`` (fallible; nothing is recorded yet)."""
        for i, site in enumerate(self.sites):
            value = site.x(env)
            pending = self._pending[i]
            back = site.n
            if back <= len(pending):
                self._current[i] = pending[-back]
            elif back - len(pending) <= len(site.history):
                self._current[i] = site.history[-(back - len(pending))]
            elif site.default is not None:
                self._current[i] = site.default(env)
            else:
                self._current[i] = type_default(value)
            pending.append(value)

    def commit(self) -> None:
        """The rows prepared since the last commit were emitted: they enter the lag histories."""
        for site, pending in zip(self.sites, self._pending):
            site.history.extend(pending)
            pending.clear()

    def discard(self) -> None:
        """The rows prepared since the last commit failed: forget them."""
        for pending in self._pending:
            pending.clear()

    # ------------------------------------------------------------ emit_version: per emission

    def produced(self) -> None:
        """The current emission produced a row (it takes the current version)."""
        self._produced = True

    def emission_done(self) -> None:
        """An emission ended: the next one that produces rows gets the next version."""
        if self._produced:
            self.version += 1
            self._produced = False

    # ------------------------------------------------------------ snapshot

    def state(self) -> tuple[int, list[list[Any]]]:
        return self.version, [list(site.history) for site in self.sites]

    def load(self, state: tuple[int, list[list[Any]]]) -> None:
        self.version, histories = state
        for site, history in zip(self.sites, histories):
            site.history = deque(history, maxlen=site.n)
