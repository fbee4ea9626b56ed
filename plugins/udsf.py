"""User-defined stream-generating functions (UDSFs) for plugin authors.

Subclass ``Udsf``; the constructor receives the BQL arguments (weakly converted to its annotations,
like a UDF) and declares the streams it reads with ``self.input(stream, name=None)``. A UDSF that
declares inputs is *stream-like*: ``process(tup)`` is called for every tuple of those streams
(``tup.input`` is the declared name). One that declares none is *source-like*: the runtime calls
``generate(now)`` on every tick. Both return an iterable of output maps (``dict``) or ``Tuple``s::

    >>> class WordSplitter(Udsf):
    ...     def __init__(self, stream: str, field: str):
    ...         self.input(stream)
    ...         self.field = field
    ...     def process(self, tup):
    ...         for word in tup.data[self.field].split(" "):
    ...             yield dict(tup.data, **{self.field: word})
    >>> f = UdsfFactory("word_splitter", WordSplitter).bind(None)
    >>> u = f("sentences", "text")
    >>> u.input_streams()
    ('sentences',)
    >>> [t.data for t in u.process(Tuple({"text": "a b"}, CLOCK, 1, "sentences"))]
    [{'text': 'a'}, {'text': 'b'}]

The kernel (``sbpy.bql.runtime.udsf``) snapshots UDSF instances with pickle, so keep their state in
plain attributes. Do not mutate the input tuple's data; build new maps.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Iterable

from sbpy.bql.errors import BQLExecutionError
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.udsf import UDSF

from .functions import analyse, wrap_generic

CLOCK = _dt.datetime(2024, 1, 1, tzinfo=_dt.timezone.utc)


class Udsf(UDSF):
    """Base class of plugin UDSFs (see the module docstring)."""

    def input(self, stream: str, name: str | None = None) -> None:
        """Read ``stream``; its tuples reach ``process`` with ``tup.input == name`` (default: the stream)."""
        if not isinstance(stream, str) or not stream:
            raise BQLExecutionError("the input stream name must be a non-empty string")
        inputs = self.__dict__.setdefault("_inputs", {})
        key = stream.lower()
        if key in inputs:
            raise BQLExecutionError(f"stream '{key}' is already an input")
        inputs[key] = name or key

    def inputs(self) -> dict[str, str]:
        """Declared inputs: stream name → input name."""
        return dict(self.__dict__.get("_inputs", {}))

    def input_streams(self) -> tuple[str, ...]:
        return tuple(self.__dict__.get("_inputs", {}))

    def process(self, tup: Tuple) -> Iterable[Any]:
        return ()

    def generate(self, now: _dt.datetime) -> Iterable[Any]:
        return ()

    def terminate(self) -> None:
        return None


def _tuples(out: Any, ts: _dt.datetime, seq: int) -> list[Tuple]:
    if not out:
        return []
    result = []
    for item in out:
        if type(item) is dict:
            result.append(Tuple(item, ts, seq, ""))
        elif isinstance(item, Tuple):
            result.append(item)
        else:
            raise BQLExecutionError(f"a UDSF must produce maps, got {type(item).__name__}")
    return result


class HostedUdsf(UDSF):
    """Adapts a plugin UDSF to the kernel: input names, dict outputs, terminate. Picklable."""

    def __init__(self, name: str, impl: Any):
        self.name = name
        self.impl = impl
        inputs = impl.inputs() if hasattr(impl, "inputs") else {s: s for s in impl.input_streams()}
        self.names = {k.lower(): v for k, v in inputs.items()}

    def input_streams(self) -> tuple[str, ...]:
        return tuple(self.names)

    def process(self, tup: Tuple) -> list[Tuple]:
        name = self.names.get(tup.input, tup.input)
        if name != tup.input:
            tup = Tuple(tup.data, tup.ts, tup.seq, name)
        return _tuples(self.impl.process(tup), tup.ts, tup.seq)

    def generate(self, now: _dt.datetime) -> list[Tuple]:
        return _tuples(self.impl.generate(now), now, 0)

    def terminate(self) -> None:
        self.impl.terminate()


class UdsfFactory:
    """A registered UDSF: the class (or factory function) and its argument conversions."""

    def __init__(self, name: str, target: Callable[..., Any]):
        if not callable(target):
            raise TypeError(f"UDSF '{name}': {target!r} is not callable")
        self.name = name
        self.target = target
        self.sig = analyse(target)

    @property
    def needs_context(self) -> bool:
        return self.sig.context

    def bind(self, ctx: Any) -> BoundUdsf:
        """The factory the kernel calls (``factory(*args) -> UDSF``), bound to a topology context."""
        return BoundUdsf(self, ctx)


class BoundUdsf:
    """``factory(*args)`` for the kernel: arity check, weak conversions, hosting adapter."""

    def __init__(self, factory: UdsfFactory, ctx: Any):
        self.factory = factory
        self._make = wrap_generic(factory.target, factory.sig, ctx)

    def __call__(self, *args: Any) -> HostedUdsf:
        f = self.factory
        lo, hi = f.sig.min_args, f.sig.max_args
        if len(args) < lo or (hi is not None and len(args) > hi):
            want = f"at least {lo}" if hi is None else str(lo) if lo == hi else f"{lo} to {hi}"
            raise BQLExecutionError(f"UDSF '{f.name}' takes {want} arguments, got {len(args)}")
        try:
            impl = self._make(*args)
        except BQLExecutionError:
            raise
        except Exception as err:  # a plugin failure fails the statement, not the server
            raise BQLExecutionError(f"cannot create UDSF '{f.name}': {err}") from err
        if not hasattr(impl, "input_streams"):
            raise BQLExecutionError(f"UDSF '{f.name}' did not return a UDSF object")
        return HostedUdsf(f.name, impl)
