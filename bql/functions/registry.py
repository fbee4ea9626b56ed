"""A generic, case-insensitive name registry (functions now; every plugin kind through ``sbpy.plugins``)
and ``FunctionSpec``, the description of one BQL function.

Shape (SensorBee's ``<Kind>Registry``): ``register`` / ``lookup`` / ``get`` / ``list`` / ``unregister``
and ``copy`` (a topology copies the global defaults so that topologies stay isolated). Not thread-safe
for concurrent registration; lookups of a registry that is no longer changed are safe.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterator, TypeVar

from ..errors import BQLExecutionError

T = TypeVar("T")


class AlreadyRegisteredError(BQLExecutionError):
    """A name is registered twice."""


class NotRegisteredError(BQLExecutionError):
    """A name was looked up or unregistered but is not registered."""


class Registry(Generic[T]):
    """Case-insensitive ``name → item`` map with SensorBee-style error messages."""

    def __init__(self, kind: str = "function", items: dict[str, T] | None = None):
        self.kind = kind
        self._items: dict[str, T] = dict(items or {})

    def register(self, name: str, item: T, *, replace: bool = False) -> None:
        """Add ``item`` under ``name``; an existing name is an error unless ``replace``."""
        key = name.lower()
        if not key:
            raise BQLExecutionError(f"{self.kind} name must not be empty")
        if key in self._items and not replace:
            raise AlreadyRegisteredError(f"{self.kind} '{key}' is already registered")
        self._items[key] = item

    def unregister(self, name: str) -> T:
        """Remove and return the item registered under ``name``."""
        key = name.lower()
        if key not in self._items:
            raise self._not_registered(key)
        return self._items.pop(key)

    def lookup(self, name: str) -> T:
        """The item under ``name``; an error naming close matches when it is not registered."""
        item = self._items.get(name.lower())
        if item is None:
            raise self._not_registered(name.lower())
        return item

    def get(self, name: str, default: T | None = None) -> T | None:
        """The item under ``name`` or ``default``."""
        return self._items.get(name.lower(), default)

    def list(self) -> dict[str, T]:
        """All items by lower-case name (a copy)."""
        return dict(self._items)

    def names(self) -> list[str]:
        return sorted(self._items)

    def copy(self) -> Registry[T]:
        """An independent registry with the same items."""
        return Registry(self.kind, self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def _not_registered(self, key: str) -> NotRegisteredError:
        close = difflib.get_close_matches(key, list(self._items), n=3, cutoff=0.75)
        hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
        return NotRegisteredError(f"{self.kind} '{key}' is not registered{hint}")


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One BQL function.

    ``impl(*args)`` gets evaluated argument values. For an aggregate (``aggregate=True``) every position
    listed in ``agg_params`` receives the list of that argument's values over the group (sorted by the
    call's ORDER BY); other positions get one value. ``max_args`` None is variadic. ``star`` means the
    call accepts ``*`` as its (aggregation) argument (``count(*)``: the list holds one ``True`` per row).
    ``null_on_null`` (scalar only): any NULL argument gives NULL without calling ``impl``.
    ``volatile``: the result may differ between calls with the same arguments (now, random).
    """

    name: str
    impl: Callable[..., Any]
    min_args: int = 0
    max_args: int | None = None
    aggregate: bool = False
    agg_params: tuple[int, ...] = (0,)
    volatile: bool = False
    star: bool = False
    null_on_null: bool = False
    stream_only: bool = False  # not allowed in EVAL (now())
    context: bool = False  # impl(env, *args): gets the evaluation Env first (now())

    def check_arity(self, n: int) -> str | None:
        """An error message when ``n`` arguments do not fit, else None."""
        if n < self.min_args or (self.max_args is not None and n > self.max_args):
            if self.max_args is None:
                want = f"at least {self.min_args}"
            elif self.min_args == self.max_args:
                want = str(self.min_args)
            else:
                want = f"{self.min_args} to {self.max_args}"
            return f"function '{self.name}' takes {want} argument{'s' if want != '1' else ''}, got {n}"
        return None


def function_registry(specs: list[FunctionSpec] | None = None) -> Registry[FunctionSpec]:
    """A function registry holding ``specs``."""
    reg: Registry[FunctionSpec] = Registry("function")
    for spec in specs or ():
        reg.register(spec.name, spec)
    return reg


def builtin_registry(copy: bool = False) -> Registry[FunctionSpec]:
    """The default registry of built-in functions (see ``sbpy.bql.functions.builtin_registry``)."""
    from . import builtin_registry as _builtin

    return _builtin(copy)
