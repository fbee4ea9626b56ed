"""Hosting user-defined stream-generating functions (UDSFs) in the FROM clause.

``FROM f("stream", args...) [RANGE ...] AS x``: the UDSF is created once per FROM item with its
arguments folded to constants. A *stream-like* UDSF names the streams it reads (``input_streams``) and
turns each of their tuples into zero or more tuples; a *source-like* UDSF reads nothing and produces
tuples when the runtime calls ``generate(now)`` (the processor's ``tick``). Every produced tuple enters
the FROM item's window as its own step of the query.

The interface a UDSF object offers (subclass ``UDSF`` or duck-type it):

- ``input_streams() -> tuple[str, ...]``
- ``process(tup: Tuple) -> list[Tuple]`` (stream-like)
- ``generate(now: datetime) -> list[Tuple]`` (source-like)
- ``terminate()``

A UDSF registry (``ProcessorContext.udsfs``) maps names to factories ``factory(*args) -> UDSF``.
Two small built-ins exist for tests and examples: ``duplicate("stream", n)`` and ``sequence(n)``.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from ..ast import UdsfCall
from ..errors import BQLExecutionError
from .processor import ProcessorContext, Tuple


class UDSF:
    """Base class with do-nothing defaults."""

    def input_streams(self) -> tuple[str, ...]:
        return ()

    def process(self, tup: Tuple) -> list[Tuple]:
        return []

    def generate(self, now: _dt.datetime) -> list[Tuple]:
        return []

    def terminate(self) -> None:
        return None


class Duplicate(UDSF):
    """``duplicate("stream", n)``: every tuple of ``stream`` ``n`` times."""

    def __init__(self, stream: Any, count: Any = 2):
        if not isinstance(stream, str):
            raise BQLExecutionError("duplicate: the first argument must be a stream name (string)")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise BQLExecutionError("duplicate: the second argument must be a non-negative int")
        self.stream = stream.lower()
        self.count = count

    def input_streams(self) -> tuple[str, ...]:
        return (self.stream,)

    def process(self, tup: Tuple) -> list[Tuple]:
        return [Tuple(dict(tup.data), tup.ts, tup.seq, tup.input) for _ in range(self.count)]


class Sequence(UDSF):
    """``sequence(n)``: a source-like UDSF; each ``generate`` call yields ``{"seq": i}`` until ``n`` tuples."""

    def __init__(self, limit: Any = 1):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise BQLExecutionError("sequence: the argument must be a non-negative int")
        self.limit = limit
        self.next = 0

    def generate(self, now: _dt.datetime) -> list[Tuple]:
        if self.next >= self.limit:
            return []
        self.next += 1
        return [Tuple({"seq": self.next - 1}, now)]


BUILTIN_UDSFS: dict[str, Any] = {"duplicate": Duplicate, "sequence": Sequence}


def _lookup(name: str, registry: Any) -> Any:
    if registry is not None:
        try:
            found = registry.lookup(name) if hasattr(registry, "lookup") else registry.get(name)
        except (KeyError, LookupError):
            found = None
        if found is not None:
            return found
    factory = BUILTIN_UDSFS.get(name)
    if factory is None:
        raise BQLExecutionError(f"UDSF '{name}' is not registered")
    return factory


def create_udsf(call: UdsfCall, context: ProcessorContext) -> Any:
    """Instantiate the UDSF of a FROM item with its constant arguments."""
    from ..eval import evaluate_constant

    factory = _lookup(call.name, context.udsfs)
    args = [evaluate_constant(a, context.functions) for a in call.args]
    create = getattr(factory, "create", None)
    udsf = create(*args) if callable(create) and not isinstance(factory, type) else factory(*args)
    return udsf
