"""UDFs and UDAFs: plain typed Python functions or explicit classes turned into ``FunctionSpec``s.

**Generic form** (SensorBee's ``ConvertGeneric``): annotate the parameters and every argument is
weakly converted to the annotated type, as ``CAST`` does (``int`` accepts ``"3"`` and ``1.5``)::

    >>> from sbpy.plugins import udf
    >>> @udf("my_inc", register=False)
    ... def inc(v: int) -> int:
    ...     return v + 1
    >>> inc.spec().impl("10")
    11

Supported annotations: ``bool``, ``int``, ``float``, ``str``, ``bytes``, ``datetime``, ``list`` /
``list[T]`` (elements converted), ``dict`` / ``dict[str, T]``, ``Any`` / ``object`` / none (the value
as it is); ``T | None`` lets NULL through. When every parameter has a non-optional type a NULL
argument gives NULL without calling the function. Defaults make trailing arguments optional,
``*args`` makes the function variadic. A first parameter named ``ctx`` / ``context`` (or annotated
``Context``) receives the topology's ``sbpy.plugins.Context`` (UDS lookups).

**Class form** (SensorBee's ``UDF`` interface): subclass ``Udf`` with ``call(ctx, *args)``,
``accept(arity)`` and ``is_aggregation_parameter(k)``. ``Udaf`` is the aggregate flavour: the
positions in ``agg_params`` receive the list of the group's values.

The wrappers are built once at registration; a call costs one extra Python frame plus one type
test per typed argument (no reflection per call).
"""
from __future__ import annotations

import datetime as _dt
import functools
import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

from sbpy.bql import conversions as conv
from sbpy.bql.errors import BQLEvaluationError, BQLExecutionError
from sbpy.bql.functions.registry import FunctionSpec
from sbpy.bql.values import type_name

MAX_PROBE = 32  # arities probed for ``Udf.accept``; accepting MAX_PROBE means variadic

_SCALARS: dict[Any, tuple[str, Callable[[Any], Any]]] = {
    bool: ("bool", conv.to_bool), int: ("int", conv.to_int), float: ("float", conv.to_float),
    str: ("string", conv.to_string), bytes: ("blob", conv.to_blob), _dt.datetime: ("timestamp", conv.to_timestamp),
}
_SCALAR_NAMES = {"bool": bool, "int": int, "float": float, "str": str, "bytes": bytes, "datetime": _dt.datetime,
                 "datetime.datetime": _dt.datetime, "_dt.datetime": _dt.datetime, "list": list, "dict": dict,
                 "Any": Any, "typing.Any": Any, "object": object}


def _identity(v: Any) -> Any:
    return v


def _array(v: Any) -> list:
    if type(v) is list:
        return v
    raise BQLEvaluationError(f"cannot convert '{type_name(v)}' to 'array'")


def _map(v: Any) -> dict:
    if type(v) is dict:
        return v
    raise BQLEvaluationError(f"cannot convert '{type_name(v)}' to 'map'")


def _not_null(c: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(v: Any) -> Any:
        if v is None:
            raise BQLEvaluationError("NULL is not allowed here")
        return c(v)
    return convert


def _array_of(c: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(v: Any) -> list:
        return [c(x) for x in _array(v)]
    return convert


def _map_of(c: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(v: Any) -> dict:
        return {k: c(x) for k, x in _map(v).items()}
    return convert


def converter_for(annotation: Any) -> tuple[Callable[[Any], Any] | None, bool]:
    """``(convert, nullable)`` for a parameter annotation; ``convert`` None means "pass as is"."""
    if isinstance(annotation, str):
        text, nullable = annotation.replace(" ", ""), False
        if text.startswith("Optional[") and text.endswith("]"):
            text, nullable = text[9:-1], True
        elif text.endswith("|None") or text.startswith("None|"):
            text, nullable = text.replace("|None", "").replace("None|", ""), True
        if "[" in text:
            outer, inner = text.split("[", 1)
            base = converter_for(inner[:-1].split(",")[-1])[0]
            if outer in ("list", "List"):
                return (_array_of(base) if base else _array), nullable
            if outer in ("dict", "Dict"):
                return (_map_of(base) if base else _map), nullable
            raise TypeError(f"unsupported parameter type '{annotation}'")
        if text not in _SCALAR_NAMES:
            raise TypeError(f"unsupported parameter type '{annotation}'")
        c, _ = converter_for(_SCALAR_NAMES[text])
        return c, nullable or c is None
    if annotation is inspect.Parameter.empty or annotation is Any or annotation is object:
        return None, True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            c, _ = converter_for(args[0])
            return c, True
        return None, True
    if annotation in _SCALARS:
        return _SCALARS[annotation][1], False
    if annotation is list or origin is list:
        inner = typing.get_args(annotation)
        base = converter_for(inner[0])[0] if inner else None
        return (_array_of(base) if base else _array), False
    if annotation is dict or origin is dict:
        inner = typing.get_args(annotation)
        base = converter_for(inner[-1])[0] if inner else None
        return (_map_of(base) if base else _map), False
    raise TypeError(f"unsupported parameter type {annotation!r}")


def _wants_context(param: inspect.Parameter) -> bool:
    ann = param.annotation
    if ann is not inspect.Parameter.empty and ann not in (Any, "Any", "typing.Any"):
        return getattr(ann, "__name__", ann) == "Context" or str(ann).endswith("Context")
    return param.name in ("ctx", "context")


@dataclass
class Signature:
    """What ``inspect`` tells about a generic function, reduced to what the wrapper needs."""

    converters: list[Callable[[Any], Any] | None]
    rest: Callable[[Any], Any] | None
    variadic: bool
    min_args: int
    max_args: int | None
    context: bool
    all_strict: bool


def analyse(fn: Callable[..., Any], context: bool | None = None) -> Signature:
    """Read ``fn``'s parameters once (at registration)."""
    try:
        hints = typing.get_type_hints(fn.__init__ if isinstance(fn, type) else fn)
    except Exception:  # noqa: BLE001 - unresolvable string annotations are parsed by name
        hints = {}
    params = list(inspect.signature(fn).parameters.values())
    wants_ctx = bool(params) and _wants_context(params[0]) if context is None else context
    if wants_ctx:
        params = params[1:]
    convs: list[Callable[[Any], Any] | None] = []
    rest, variadic, required, strict = None, False, 0, bool(params)
    for p in params:
        ann = hints.get(p.name, p.annotation)
        if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD):
            if p.kind is p.KEYWORD_ONLY and p.default is p.empty:
                raise TypeError(f"keyword-only parameter '{p.name}' needs a default")
            continue
        c, nullable = converter_for(ann)
        strict = strict and c is not None and not nullable
        if p.kind is p.VAR_POSITIONAL:
            rest, variadic = c, True
            continue
        convs.append(c)
        if p.default is p.empty:
            required = len(convs)
    return Signature(convs, rest, variadic, required, None if variadic else len(convs), wants_ctx, strict)


def wrap_generic(fn: Callable[..., Any], sig: Signature, ctx: Any = None) -> Callable[..., Any]:
    """A function taking BQL values, converting them and calling ``fn`` (``ctx`` first if wanted)."""
    target = functools.partial(fn, ctx) if sig.context else fn
    convs, rest = sig.converters, sig.rest
    if rest is None and all(c is None for c in convs):
        return target
    if not sig.variadic and sig.min_args == len(convs):
        if len(convs) == 1:
            c0 = convs[0] or _identity

            def call1(a: Any) -> Any:
                return target(c0(a))
            return call1
        if len(convs) == 2:
            c0, c1 = convs[0] or _identity, convs[1] or _identity

            def call2(a: Any, b: Any) -> Any:
                return target(c0(a), c1(b))
            return call2
    fixed = [c or _identity for c in convs]
    more = rest or _identity
    n = len(fixed)

    def call(*args: Any) -> Any:
        out = [c(a) for c, a in zip(fixed, args)]
        if len(args) > n:
            out += [more(a) for a in args[n:]]
        return target(*out)
    return call


class Udf:
    """Explicit UDF (SensorBee's ``UDF`` interface). Override ``call``; ``arity`` (int or
    ``(min, max)``, max None = variadic) or ``accept`` says which argument counts are allowed.

    >>> class Twice(Udf):
    ...     arity = 1
    ...     def call(self, ctx, v):
    ...         return v * 2
    >>> Twice().spec("twice").impl(4)
    8
    """

    arity: int | tuple[int, int | None] | None = None
    volatile = False
    needs_states = True  # False: ``call`` never uses ``ctx.state`` (may then run on Spark workers)

    def call(self, ctx: Any, *args: Any) -> Any:
        raise NotImplementedError

    def accept(self, arity: int) -> bool:
        a = self.arity
        if a is None:
            return True
        lo, hi = (a, a) if isinstance(a, int) else a
        return arity >= lo and (hi is None or arity <= hi)

    def is_aggregation_parameter(self, k: int) -> bool:
        return False

    def spec(self, name: str, ctx: Any = None) -> FunctionSpec:
        """The ``FunctionSpec`` under ``name``, calls bound to ``ctx``."""
        accepted = [n for n in range(MAX_PROBE + 1) if self.accept(n)]
        if not accepted:
            raise BQLExecutionError(f"function '{name}' accepts no number of arguments")
        lo, hi = accepted[0], (None if accepted[-1] == MAX_PROBE else accepted[-1])
        agg = tuple(k for k in range(hi if hi is not None else MAX_PROBE) if self.is_aggregation_parameter(k))
        impl = functools.partial(self.call, ctx)
        if len(accepted) != (hi if hi is not None else MAX_PROBE) - lo + 1:  # gaps: check per call
            impl = functools.partial(_checked_call, self.accept, name, impl)
        return FunctionSpec(name, impl, lo, hi, aggregate=bool(agg), agg_params=agg or (0,),
                            volatile=bool(self.volatile))


def _checked_call(accept: Callable[[int], bool], name: str, impl: Callable[..., Any], *args: Any) -> Any:
    if not accept(len(args)):
        raise BQLEvaluationError(f"function '{name}' does not accept {len(args)} arguments")
    return impl(*args)


class Udaf(Udf):
    """Explicit aggregate UDF: arguments at ``agg_params`` positions arrive as lists of the group's
    values (ordered by the call's ORDER BY).

    >>> class Total(Udaf):
    ...     arity = 1
    ...     def call(self, ctx, values):
    ...         return sum(v for v in values if v is not None)
    >>> Total().spec("total").aggregate
    True
    """

    agg_params: tuple[int, ...] = (0,)

    def is_aggregation_parameter(self, k: int) -> bool:
        return k in self.agg_params


@dataclass
class UdfDef:
    """A registered UDF before it is bound to a topology: ``spec(ctx)`` gives its ``FunctionSpec``."""

    name: str
    source: Any  # the function or Udf instance, for listings
    build: Callable[[Any], FunctionSpec]
    needs_context: bool = False
    kind: str = "udf"
    _cached: FunctionSpec | None = None
    uses_states: bool | None = None  # None: as ``needs_context``

    @property
    def needs_states(self) -> bool:
        """True when calls may reach the topology's states (they then run on the driver)."""
        return self.needs_context if self.uses_states is None else self.uses_states

    def spec(self, ctx: Any = None) -> FunctionSpec:
        if not self.needs_context:
            if self._cached is None:
                self._cached = self.build(None)
            return self._cached
        return self.build(ctx)


def define(name: str, target: Any, *, aggregate: bool = False, agg_params: tuple[int, ...] = (0,),
           volatile: bool = False, context: bool | None = None) -> UdfDef:
    """A ``UdfDef`` for a generic function or a ``Udf`` instance (or class)."""
    if isinstance(target, type) and issubclass(target, Udf):
        target = target()
    if isinstance(target, Udf):
        obj = target
        return UdfDef(name, obj, lambda ctx: obj.spec(name, ctx), True,
                      "udaf" if isinstance(obj, Udaf) or any(obj.is_aggregation_parameter(k) for k in range(4))
                      else "udf", uses_states=bool(getattr(obj, "needs_states", True)))
    if not callable(target):
        raise TypeError(f"function '{name}': {target!r} is not callable")
    sig = analyse(target, context)
    if aggregate:
        bad = [k for k in agg_params if sig.max_args is not None and k >= sig.max_args]
        if bad:
            raise TypeError(f"aggregate '{name}': aggregation parameter {bad[0]} does not exist")
        sig.all_strict = False  # a list of values is never NULL as a whole

    def build(ctx: Any) -> FunctionSpec:
        return FunctionSpec(name, wrap_generic(target, sig, ctx), sig.min_args, sig.max_args,
                            aggregate=aggregate, agg_params=tuple(agg_params), volatile=volatile,
                            null_on_null=sig.all_strict and not aggregate)

    return UdfDef(name, target, build, sig.context, "udaf" if aggregate else "udf")
