"""The plugin registries: one ``Registry`` shape (``sbpy.bql.functions.registry``) per plugin kind.

``default_registries()`` holds the global defaults (built-ins plus every imported plugin);
``for_topology(name)`` gives a topology its own copies, with context-taking UDFs, UDSFs and the
``uds`` sink bound to that topology's states. Names are case-insensitive identifiers; duplicates are
errors ("sink type 'x' is already registered"), unknown names list close matches.

    >>> regs = PluginRegistries()
    >>> regs.add_udf("double", lambda x: x * 2)
    >>> plugins = regs.for_topology("t1")
    >>> plugins.functions.lookup("DOUBLE").impl(21)
    42
    >>> regs.add_sink_type("file", object)
    Traceback (most recent call last):
    ...
    sbpy.bql.functions.registry.AlreadyRegisteredError: sink type 'file' is already registered
"""
from __future__ import annotations

import functools
import re
import threading
from typing import Any

from sbpy.bql.errors import BQLExecutionError
from sbpy.bql.functions.registry import AlreadyRegisteredError, NotRegisteredError, Registry

from .functions import UdfDef, define
from .udsf import UdsfFactory

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

KINDS = ("udf", "udsf", "uds_type", "source_type", "sink_type")


def check_name(kind: str, name: str) -> str:
    """``name`` lower-cased; an error unless it is an identifier."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise BQLExecutionError(f"{kind} name '{name}' is not a valid identifier")
    return name.lower()


class PluginRegistries:
    """One registry per plugin kind. ``builtins=True`` pre-registers the built-in types."""

    def __init__(self, builtins: bool = True):
        self.udfs: Registry[UdfDef] = Registry("function")
        self.udsfs: Registry[UdsfFactory] = Registry("UDSF")
        self.uds_types: Registry[Any] = Registry("state type")
        self.source_types: Registry[Any] = Registry("source type")
        self.sink_types: Registry[Any] = Registry("sink type")
        self.origins: dict[tuple[str, str], str] = {}  # (kind, name) → module that registered it
        self._lock = threading.Lock()
        if builtins:
            _add_builtins(self)

    # ------------------------------------------------------------ registering

    def _add(self, kind: str, registry: Registry, name: str, item: Any, origin: str | None, replace: bool) -> None:
        key = check_name(registry.kind, name)
        with self._lock:
            registry.register(key, item, replace=replace)
            self.origins[(kind, key)] = origin or getattr(item, "__module__", None) or "?"

    def add_function(self, d: UdfDef, *, replace: bool = False, origin: str | None = None) -> None:
        """Register a prepared ``UdfDef``; built-in function names are taken."""
        from sbpy.bql.functions import builtin_registry

        if not replace and d.name.lower() in builtin_registry():
            raise AlreadyRegisteredError(f"function '{d.name.lower()}' is already registered")
        self._add("udf", self.udfs, d.name, d, origin or getattr(d.source, "__module__", None), replace)

    def add_udf(self, name: str, fn: Any, *, volatile: bool = False, context: bool | None = None,
                replace: bool = False) -> None:
        """A generic function or a ``Udf`` instance/class as UDF ``name``."""
        self.add_function(define(check_name("function", name), fn, volatile=volatile, context=context),
                          replace=replace)

    def add_udaf(self, name: str, fn: Any, *, agg_params: tuple[int, ...] = (0,), context: bool | None = None,
                 replace: bool = False) -> None:
        """An aggregate function: the positions in ``agg_params`` receive lists of values."""
        self.add_function(define(check_name("function", name), fn, aggregate=True, agg_params=agg_params,
                                 context=context), replace=replace)

    def add_udsf(self, name: str, target: Any, *, replace: bool = False) -> None:
        """A ``Udsf`` class or a factory function returning a UDSF object."""
        item = target if isinstance(target, UdsfFactory) else UdsfFactory(check_name("UDSF", name), target)
        self._add("udsf", self.udsfs, name, item, getattr(target, "__module__", None), replace)

    def add_uds_type(self, name: str, creator: Any, *, replace: bool = False) -> None:
        """A UDS type: a ``SharedState`` class or any object with ``create(params)``; a plain function
        ``f(params) -> state`` is accepted too (no LOAD STATE then)."""
        if not hasattr(creator, "create"):
            if not callable(creator):
                raise TypeError(f"state type '{name}': {creator!r} has no create(params)")
            creator = FunctionCreator(creator)
        self._add("uds_type", self.uds_types, name, creator, getattr(creator, "__module__", None), replace)

    def add_source_type(self, name: str, cls: Any, *, replace: bool = False) -> None:
        """A source type: ``cls(params)`` with ``run(ctx)`` (see ``sbpy.plugins.SourceType``)."""
        self._add("source_type", self.source_types, name, cls, None, replace)

    def add_sink_type(self, name: str, cls: Any, *, replace: bool = False) -> None:
        """A sink type: ``cls(params, recovering=False)`` with ``write(tuples, batch)`` and ``close()``."""
        self._add("sink_type", self.sink_types, name, cls, None, replace)

    def registry(self, kind: str) -> Registry:
        """The registry of ``kind`` (one of ``KINDS``)."""
        if kind not in KINDS:
            raise ValueError(f"unknown plugin kind '{kind}'")
        return self.udfs if kind == "udf" else getattr(self, kind + "s")

    def unregister(self, kind: str, name: str) -> Any:
        """Remove ``name`` from the ``kind`` registry."""
        with self._lock:
            item = self.registry(kind).unregister(name)
            self.origins.pop((kind, name.lower()), None)
            return item

    def describe(self) -> list[dict[str, str]]:
        """One row ``{kind, name, module}`` per registered component, sorted (``sbpy plugins``)."""
        rows = []
        for kind in KINDS:
            reg = self.registry(kind)
            for name in reg.names():
                item = reg.lookup(name)
                label = getattr(item, "kind", kind) if kind == "udf" else kind
                rows.append({"kind": label, "name": name, "module": self.origins.get((kind, name), "?")})
        return rows

    # ------------------------------------------------------------ copies

    def copy(self) -> PluginRegistries:
        """Independent registries with the same items."""
        other = PluginRegistries(builtins=False)
        for kind in KINDS:
            setattr(other, "udfs" if kind == "udf" else kind + "s", self.registry(kind).copy())
        other.origins = dict(self.origins)
        return other

    def for_topology(self, topology: str, states: Any = None) -> TopologyPlugins:
        """A topology's own registries (see ``TopologyPlugins``)."""
        return TopologyPlugins(self.copy(), topology, states)


class FunctionCreator:
    """A UDS type given as a plain function ``f(params) -> state``."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.__module__ = getattr(fn, "__module__", "?")

    def create(self, params: dict[str, Any]) -> Any:
        return self.fn(params)


class TopologyPlugins:
    """What one topology uses: ``functions`` (built-ins + UDFs, a ``Registry[FunctionSpec]`` for
    ``ProcessorContext.functions``), ``udsfs`` (kernel factories for ``ProcessorContext.udsfs``),
    ``uds_types``, ``source_types``, ``sink_types`` (with ``uds`` bound to ``states``) and ``context``
    (the ``sbpy.plugins.Context`` handed to context-taking plugins). ``states`` may be set later
    (``bind_states``) since the topology's ``StateManager`` needs ``uds_types`` first.
    """

    def __init__(self, registries: PluginRegistries, topology: str, states: Any = None):
        from sbpy.bql.functions import builtin_registry

        from .api import Context

        self.registries = registries
        self.context = Context(topology, states)
        self.functions = builtin_registry(copy=True)
        self.functions.kind = "function"
        for name in registries.udfs.names():
            self.functions.register(name, registries.udfs.lookup(name).spec(self.context), replace=True)
        self.udsfs: Registry[Any] = Registry("UDSF")
        for name in registries.udsfs.names():
            item = registries.udsfs.lookup(name)
            self.udsfs.register(name, item.bind(self.context) if isinstance(item, UdsfFactory) else item)
        self.uds_types = registries.uds_types.copy()
        self.source_types = registries.source_types.copy()
        self.sink_types = registries.sink_types.copy()
        uds = self.sink_types.get("uds")
        if uds is not None and getattr(uds, "binds_context", False):
            self.sink_types.register("uds", functools.partial(uds, context=self.context), replace=True)

    @property
    def topology(self) -> str:
        return self.context.topology

    @property
    def states(self) -> Any:
        return self.context.states

    def bind_states(self, states: Any) -> None:
        """Make ``states`` (``.get(name)``) what plugins of this topology see."""
        self.context.bind(states)

    def stateful_calls(self, stmt: Any) -> list[str]:
        """The functions and UDSFs ``stmt`` (an AST node) calls that take the topology's context, i.e.
        may reach its states: such calls must run where the states live (the driver)."""
        from sbpy.bql.ast import FunctionCall, UdsfCall

        found: list[str] = []
        for n in stmt.walk():
            if isinstance(n, FunctionCall):
                d = self.registries.udfs.get(n.name)
                if d is not None and d.needs_states and n.name not in found:
                    found.append(n.name)
            elif isinstance(n, UdsfCall):
                f = self.registries.udsfs.get(n.name)
                if getattr(f, "needs_context", False) and n.name not in found:
                    found.append(n.name)
        return found


_DEFAULT: PluginRegistries | None = None
_DEFAULT_LOCK = threading.Lock()


def default_registries() -> PluginRegistries:
    """The process-wide registries plugins register into when imported."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = PluginRegistries()
    return _DEFAULT


def for_topology(topology: str, states: Any = None) -> TopologyPlugins:
    """``default_registries().for_topology(topology, states)``."""
    return default_registries().for_topology(topology, states)


def _add_builtins(regs: PluginRegistries) -> None:
    from sbpy.bql.runtime.udsf import BUILTIN_UDSFS

    from .builtin.connectors import CONNECTOR_SINK_TYPES, CONNECTOR_SOURCE_TYPES
    from .builtin.nexmark_source import SOURCE_TYPES as NEXMARK_SOURCE_TYPES
    from .builtin.sinks import SINK_TYPES
    from .builtin.sources import SOURCE_TYPES
    from .builtin.uds_sink import UDSSink

    for name, cls in {**SOURCE_TYPES, **CONNECTOR_SOURCE_TYPES, **NEXMARK_SOURCE_TYPES}.items():
        regs._add("source_type", regs.source_types, name, cls, "builtin", False)
    for name, cls in {**SINK_TYPES, **CONNECTOR_SINK_TYPES, "uds": UDSSink}.items():
        regs._add("sink_type", regs.sink_types, name, cls, "builtin", False)
    for name, factory in BUILTIN_UDSFS.items():
        regs._add("udsf", regs.udsfs, name, factory, "builtin", False)


__all__ = ["KINDS", "AlreadyRegisteredError", "NotRegisteredError", "PluginRegistries", "TopologyPlugins",
           "default_registries", "for_topology", "check_name"]
