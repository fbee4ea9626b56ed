"""The plugin author's API: base classes and registering decorators for every plugin kind.

Importing a plugin module registers its components in the global default registries (SensorBee's
``init()`` registration); each topology works on its own copy. Example plugin module::

    from sbpy.plugins import SharedState, udf, uds_type

    @uds_type("my_counter")
    class Counter(SharedState):
        def __init__(self, start: int = 1):
            self.c = int(start) - 1
        def next(self) -> int:
            self.c += 1
            return self.c

    @udf("my_next_count")
    def next_count(ctx, name: str) -> int:
        return ctx.state(name, Counter).next()

Kinds: ``udf`` / ``udaf`` (functions, ``sbpy.plugins.functions``), ``udsf`` (``Udsf`` classes),
``uds_type`` (``SharedState`` classes: CREATE/LOAD STATE), ``source_type`` (``SourceType``),
``sink_type`` (``SinkType``). Every decorator takes ``register=False`` (just annotate) and
``registry=`` (another ``PluginRegistries``) and returns its argument unchanged.
"""
from __future__ import annotations

import datetime as _dt
import types
import weakref
from typing import Any, Iterable

from sbpy.bql.errors import BQLExecutionError

from .functions import Udaf, Udf, define
from .udsf import Udsf


class Context:
    """What a context-taking UDF, UDSF or UDS sees of its topology: its name and its states."""

    def __init__(self, topology: str = "", states: Any = None):
        self.topology = topology
        self.states = states

    def state(self, name: str, kind: type | tuple[type, ...] | None = None) -> Any:
        """The UDS called ``name``; with ``kind`` it must be an instance of it."""
        if not isinstance(name, str):
            raise BQLExecutionError("a state name must be a string")
        if self.states is None:
            raise BQLExecutionError(f"state '{name.lower()}' was not found")
        state = self.states.get(name)
        if kind is not None and not isinstance(state, kind):
            raise BQLExecutionError(f"state '{name.lower()}' is not a {_kind_name(kind)}")
        return state

    def bind(self, states: Any) -> None:
        """Make ``states`` what this context sees; a context unpickled in this process (a UDSF restored
        from a pipeline snapshot) is then this one again."""
        self.states = states
        if self.topology:
            _LIVE[self.topology] = self

    def __reduce__(self) -> Any:  # states are driver objects: pickled, a context keeps only its name
        return (_context_for, (self.topology,))


_LIVE: weakref.WeakValueDictionary[str, Context] = weakref.WeakValueDictionary()


def _context_for(topology: str) -> Context:
    """The live context of ``topology`` in this process (the driver), else one without states (a
    Spark worker: a UDS lives in the driver only)."""
    live = _LIVE.get(topology) if topology else None
    return live if live is not None else Context(topology, None)


def _kind_name(kind: Any) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(getattr(k, "type_name", None) or k.__name__ for k in kinds)


class SharedState:
    """A user-defined state (UDS) type. The class is its own creator:

    - ``create(params)`` (classmethod; default ``cls(**params)``): CREATE STATE ... WITH.
    - ``load_state(reader, params)`` (classmethod, optional): LOAD STATE builds a new instance from
      what ``save`` wrote; without it LOAD STATE fails.
    - ``save(writer, params)`` (optional): SAVE STATE writes the state to a binary file object.
    - ``load(reader, params)`` (optional): LOAD STATE updates an existing instance in place.
    - ``write(data)`` (optional): the ``uds`` sink hands it every tuple (a BQL map).
    - ``terminate()``: DROP STATE, replacement by LOAD STATE, topology stop.
    """

    type_name: str | None = None

    @classmethod
    def create(cls, params: dict[str, Any]) -> SharedState:
        try:
            return cls(**params)
        except TypeError as err:
            raise ValueError(str(err).replace("__init__() ", "")) from None

    def terminate(self) -> None:
        return None


class SourceType:
    """A source type: ``tuples()`` yields maps (or ``(map, timestamp)``); ``run`` journals them.

    Parameters arrive as a dict of BQL values. ``interval`` (seconds or a duration string such as
    ``"100ms"``; default ``default_interval``) paces the tuples and stamps each with its scheduled
    time. Pausing is handled by the runtime (emitting blocks). ``rewindable = True`` makes REWIND
    SOURCE restart ``tuples()``; then the source waits at its end instead of stopping. After a
    server restart a non-rewindable source skips the tuples already journaled (``tuples()`` should
    then yield the same sequence again; infinite generators just continue counting).

    >>> class Count(SourceType):
    ...     def tuples(self):
    ...         yield from ({"n": i} for i in range(3))
    >>> [d for d, _ in Count({}).collect()]
    [{'n': 0}, {'n': 1}, {'n': 2}]

    Optional ``update(params)``: UPDATE SOURCE name SET k = v, ... (SensorBee's ``Updater``) calls it
    with the folded SET parameters from the request's thread while ``run`` goes on; raise
    ``ValueError`` on a key or value it cannot take. Without it the statement answers
    "source 'name' cannot be updated". (``sbpy.server.node_update``.)
    """

    rewindable = False
    default_interval: float = 0.0

    def __init__(self, params: dict[str, Any]):
        from sbpy.plugins.builtin.sources import parse_duration

        self.params = params
        self.interval = parse_duration(params.get("interval", self.default_interval))
        rewindable = params.get("rewindable", type(self).rewindable)
        if not isinstance(rewindable, bool):
            raise ValueError("rewindable must be a bool")
        self.rewindable = rewindable

    def tuples(self) -> Iterable[Any]:
        raise NotImplementedError

    def collect(self, limit: int | None = None) -> list[tuple[dict[str, Any], _dt.datetime | None]]:
        """The first ``limit`` items of ``tuples()`` as ``(data, ts)`` pairs, without pacing (tests)."""
        out = []
        for item in self.tuples():
            if limit is not None and len(out) >= limit:
                break
            out.append(item if isinstance(item, tuple) else (item, None))
        return out

    def run(self, ctx: Any) -> None:
        skip = 0 if self.rewindable else getattr(ctx, "skip", 0)
        rewind_requested = getattr(ctx, "rewind_requested", lambda: False)
        from sbpy.plugins.builtin.sources import after_turn, wait_turn

        while True:
            rewound = False
            previous: float | None = None
            for item in self.tuples():
                if rewind_requested():
                    rewound = True
                    break
                if skip:
                    skip -= 1
                    continue
                data, ts = item if isinstance(item, tuple) else (item, None)
                if self.interval > 0:
                    at = wait_turn(ctx, previous, lambda: self.interval)
                    if at is None:
                        return
                    ts = ts or _dt.datetime.fromtimestamp(at, _dt.timezone.utc)
                    previous = after_turn(at, self.interval)
                ctx.emit(data, ts)
            if rewound:
                continue
            if not self.rewindable or not ctx.wait_for_rewind():
                return


class SinkType:
    """A sink type: override ``write_tuple(data)`` (or ``write(tuples, batch)`` for bulk writes).

    ``write`` receives the micro-batch id ``batch = (query_id, batch_id)``; a batch Spark replays
    after a crash arrives again with the same id. The base ``write`` skips a batch it has already
    written (in memory); a sink with durable output should record the last id durably instead.

    >>> class Collect(SinkType):
    ...     def __init__(self, params, recovering=False):
    ...         super().__init__(params, recovering)
    ...         self.rows = []
    ...     def write_tuple(self, data):
    ...         self.rows.append(data)
    >>> s = Collect({}); s.write([{"a": 1}], ("q", 0)); s.write([{"a": 1}], ("q", 0)); s.rows
    [{'a': 1}]

    Optional ``update(params)``: UPDATE SINK name SET k = v, ... calls it with the folded SET
    parameters, never while a write runs; raise ``ValueError`` on what it cannot take.
    """

    def __init__(self, params: dict[str, Any], recovering: bool = False):
        self.params = params
        self.recovering = recovering
        self.written: dict[str, int] = {}

    def write(self, tuples: list[dict[str, Any]], batch: tuple[str, int] | None = None) -> None:
        if batch is not None and self.written.get(batch[0], -1) >= batch[1]:
            return
        for data in tuples:
            self.write_tuple(data)
        if batch is not None:
            self.written[batch[0]] = batch[1]

    def write_tuple(self, data: dict[str, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        return None


# ---------------------------------------------------------------- registering decorators


def _registry(registry: Any) -> Any:
    if registry is not None:
        return registry
    from .registry import default_registries

    return default_registries()


def _decorator(kind: str, name: Any, register: bool, registry: Any, **options: Any) -> Any:
    def apply(target: Any) -> Any:
        key = name if isinstance(name, str) else getattr(target, "type_name", None) or target.__name__
        if kind == "udf" or kind == "udaf":
            d = define(key, target, **options)
            if isinstance(target, types.FunctionType):
                target.udf, target.spec = d, d.spec
            if register:
                _registry(registry).add_function(d)
            return target
        if register:
            getattr(_registry(registry), f"add_{kind}")(key, target)
        return target

    return apply(name) if callable(name) and not isinstance(name, str) else apply


def udf(name: Any = None, *, register: bool = True, registry: Any = None, volatile: bool = False,
        context: bool | None = None) -> Any:
    """Register a function (or ``Udf`` class) as a UDF; ``@udf`` or ``@udf("bql_name")``."""
    return _decorator("udf", name, register, registry, volatile=volatile, context=context)


def udaf(name: Any = None, *, agg_params: tuple[int, ...] = (0,), register: bool = True,
         registry: Any = None, context: bool | None = None) -> Any:
    """Register an aggregate function: the positions in ``agg_params`` receive lists of values."""
    return _decorator("udaf", name, register, registry, aggregate=True, agg_params=agg_params,
                      context=context)


def udsf(name: Any = None, *, register: bool = True, registry: Any = None) -> Any:
    """Register a ``Udsf`` class (or a factory function returning one)."""
    return _decorator("udsf", name, register, registry)


def uds_type(name: Any = None, *, register: bool = True, registry: Any = None) -> Any:
    """Register a ``SharedState`` class as a UDS type (CREATE STATE ... TYPE name)."""
    return _decorator("uds_type", name, register, registry)


def source_type(name: Any = None, *, register: bool = True, registry: Any = None) -> Any:
    """Register a source type class (``cls(params)`` with ``run(ctx)``, e.g. a ``SourceType``)."""
    return _decorator("source_type", name, register, registry)


def sink_type(name: Any = None, *, register: bool = True, registry: Any = None) -> Any:
    """Register a sink type class (``cls(params, recovering=False)`` with ``write`` / ``close``)."""
    return _decorator("sink_type", name, register, registry)


__all__ = ["Context", "SharedState", "SinkType", "SourceType", "Udaf", "Udf", "Udsf", "sink_type",
           "source_type", "udaf", "udf", "uds_type", "udsf"]
