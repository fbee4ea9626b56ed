"""Parameters of the built-in source and sink types (design/sensorbee-server.md, section 3).

Used by ``sbpy check`` (the server's own CREATE does the same checks when it builds the node):
required parameters must be given and known parameters must have the right type. Unknown
parameters are ignored, as SensorBee's built-ins do, and unknown types are never an error (a
plugin may provide them). Parameter values are folded as constants; a value that cannot be folded
is left to the node itself.
"""
from __future__ import annotations

import re
from typing import Any

from ..ast import CreateSink, CreateSource, Literal, Param, Statement, UnaryOp
from ..errors import BQLError
from .context import fail

_DURATION = re.compile(r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*$")

# kind -> type -> {param: (type, required)}; types: str, int, bool, duration (int/float/Go duration string)
BUILTIN_PARAMS: dict[str, dict[str, dict[str, tuple[str, bool]]]] = {
    "source": {
        "file": {
            "path": ("string", True),
            "timestamp_field": ("string", False),
            "interval": ("duration", False),
            "repeat": ("int", False),
            "rewindable": ("bool", False),
        },
        "node_statuses": {"interval": ("duration", False)},
        "edge_statuses": {"interval": ("duration", False)},
        "dropped_tuples": {},
    },
    "sink": {
        "stdout": {},
        "file": {
            "path": ("string", True),
            "truncate": ("bool", False),
            "max_size": ("int", False),
            "max_age": ("int", False),
            "max_backups": ("int", False),
        },
        "uds": {"name": ("string", True)},
    },
}

_UNFOLDABLE = object()


def _fold(value: Any) -> Any:
    if isinstance(value, Literal):
        return value.value
    if isinstance(value, UnaryOp) and value.op == "-" and isinstance(value.operand, Literal):
        v = value.operand.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v
    try:
        from ..eval import evaluate_constant
    except ImportError:
        return _UNFOLDABLE
    try:
        return evaluate_constant(value)
    except BQLError:
        return _UNFOLDABLE
    except Exception:  # noqa: BLE001 - the node reports what the checker cannot fold
        return _UNFOLDABLE


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bytes):
        return "blob"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "map"
    return "timestamp"


def _ok(kind: str, v: Any) -> bool:
    if kind == "string":
        return isinstance(v, str)
    if kind == "bool":
        return isinstance(v, bool)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if kind == "duration":
        if isinstance(v, str):
            return v == "0" or bool(_DURATION.match(v))
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return True


def _want(kind: str) -> str:
    return {"duration": "a number of seconds or a duration string such as \"100ms\"",
            "int": "an int", "bool": "a bool", "string": "a string"}[kind]


def check_params(node_kind: str, type_name: str, params: tuple[Param, ...], where: Any) -> None:
    """Raise if ``params`` do not suit the built-in ``node_kind`` type ``type_name``."""
    spec = BUILTIN_PARAMS.get(node_kind, {}).get(type_name.lower())
    if spec is None:
        return
    given = {p.name.lower(): p for p in params}
    for name, (kind, required) in spec.items():
        p = given.get(name)
        if p is None:
            if required:
                raise fail(f"{node_kind} type '{type_name}' needs the parameter '{name}'", where)
            continue
        v = _fold(p.value)
        if v is _UNFOLDABLE:
            continue
        if not _ok(kind, v):
            raise fail(
                f"parameter '{name}' of {node_kind} type '{type_name}' must be {_want(kind)}, not {_type_name(v)}",
                p,
            )


def check_builtin_params(stmt: Statement) -> None:
    """Check a CREATE SOURCE / CREATE SINK of a built-in type; other statements pass."""
    if isinstance(stmt, CreateSource):
        check_params("source", stmt.type_name, stmt.params, stmt)
    elif isinstance(stmt, CreateSink):
        check_params("sink", stmt.type_name, stmt.params, stmt)
