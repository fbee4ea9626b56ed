"""Argument checks shared by the built-in functions: each returns the value or raises a clear
``BQLEvaluationError`` naming the function, the parameter and the type it got."""
from __future__ import annotations

import datetime as _dt
from typing import Any

from ..errors import BQLEvaluationError
from ..values import type_name


def type_error(fn: str, param: str, want: str, value: Any) -> BQLEvaluationError:
    return BQLEvaluationError(f"function '{fn}': '{param}' must be {want}, got '{type_name(value)}'")


def number(fn: str, param: str, v: Any) -> int | float:
    t = type(v)
    if t is int or t is float:
        return v
    raise type_error(fn, param, "'int' or 'float'", v)


def as_float(fn: str, param: str, v: Any) -> float:
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    raise type_error(fn, param, "'int' or 'float'", v)


def integer(fn: str, param: str, v: Any) -> int:
    if type(v) is int:
        return v
    raise type_error(fn, param, "'int'", v)


def string(fn: str, param: str, v: Any) -> str:
    if type(v) is str:
        return v
    raise type_error(fn, param, "'string'", v)


def array(fn: str, param: str, v: Any) -> list:
    if type(v) is list:
        return v
    raise type_error(fn, param, "'array'", v)


def timestamp(fn: str, param: str, v: Any) -> _dt.datetime:
    if type(v) is _dt.datetime:
        return v
    raise type_error(fn, param, "'timestamp'", v)


def boolean(fn: str, param: str, v: Any) -> bool:
    if type(v) is bool:
        return v
    raise type_error(fn, param, "'bool'", v)
