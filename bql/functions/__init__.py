"""BQL functions: the generic ``Registry``, ``FunctionSpec`` and the built-in functions and aggregates.

``builtin_registry()`` is the shared default registry (do not register into it; use
``builtin_registry(copy=True)`` for a registry of one's own, e.g. per topology).
"""
from __future__ import annotations

from .registry import (
    AlreadyRegisteredError, FunctionSpec, NotRegisteredError, Registry, function_registry,
)

_DEFAULT: Registry[FunctionSpec] | None = None


def builtin_specs() -> list[FunctionSpec]:
    """Every built-in function and aggregate."""
    from . import builtin_aggregate, builtin_numeric, builtin_other, builtin_string, builtin_timeplus

    return [*builtin_numeric.SPECS, *builtin_string.SPECS, *builtin_other.SPECS, *builtin_aggregate.SPECS,
            *builtin_timeplus.SPECS]


def builtin_registry(copy: bool = False) -> Registry[FunctionSpec]:
    """The default function registry (built-ins only); ``copy=True`` gives an independent copy."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = function_registry(builtin_specs())
    return _DEFAULT.copy() if copy else _DEFAULT


__all__ = [
    "AlreadyRegisteredError",
    "FunctionSpec",
    "NotRegisteredError",
    "Registry",
    "builtin_registry",
    "builtin_specs",
    "function_registry",
]
