"""The eleven built-in aggregates (Function Reference, "Aggregate Functions").

Each gets its aggregation parameters as lists of per-row values (already in ORDER BY order). Except for
``count``, an empty input gives NULL; NULL inputs are skipped except by ``array_agg``; an input with
only NULLs gives NULL. ``max``/``min`` keep the type of the winning value (the later of equal values
wins, so ``max(3.0, 3)`` is ``3``); ``sum`` is int unless a float is present; ``avg``/``median`` are float.
"""
from __future__ import annotations

from typing import Any

from ..errors import BQLEvaluationError
from ..values import check_int
from .registry import FunctionSpec
from .signatures import boolean, number, string, type_error


def _array_agg(xs: list) -> Any:
    return list(xs) if xs else None


def _numbers(fn: str, xs: list) -> list:
    return [number(fn, "x", x) for x in xs if x is not None]


def _avg(xs: list) -> Any:
    vals = _numbers("avg", xs)
    if not vals:
        return None
    return sum(float(v) for v in vals) / len(vals)


def _bool_and(xs: list) -> Any:
    vals = [boolean("bool_and", "x", x) for x in xs if x is not None]
    return all(vals) if vals else None


def _bool_or(xs: list) -> Any:
    vals = [boolean("bool_or", "x", x) for x in xs if x is not None]
    return any(vals) if vals else None


def _count(xs: list) -> int:
    n = 0
    for x in xs:
        if x is not None:
            n += 1
    return n


def _json_object_agg(keys: list, values: list) -> Any:
    if not keys:
        return None
    out: dict = {}
    for k, v in zip(keys, values):
        if k is None:
            if v is None:
                continue
            raise BQLEvaluationError("function 'json_object_agg': a key is NULL")
        if type(k) is not str:
            raise type_error("json_object_agg", "k", "'string'", k)
        if k in out:
            raise BQLEvaluationError(f"function 'json_object_agg': key '{k}' appears more than once")
        out[k] = v
    return out


def _max(xs: list) -> Any:
    best = None
    for v in _numbers("max", xs):
        if best is None or v >= best:
            best = v
    return best


def _min(xs: list) -> Any:
    best = None
    for v in _numbers("min", xs):
        if best is None or v <= best:
            best = v
    return best


def _median(xs: list) -> Any:
    vals = sorted(float(v) for v in _numbers("median", xs))
    n = len(vals)
    if n == 0:
        return None
    mid = n // 2
    if n % 2:
        return vals[mid]
    return (vals[mid - 1] + vals[mid]) / 2.0


def _string_agg(xs: list, sep: Any) -> Any:
    vals = [string("string_agg", "x", x) for x in xs if x is not None]
    if not vals:
        return None
    if sep is None:
        sep = ""
    return string("string_agg", "sep", sep).join(vals)


def _sum(xs: list) -> Any:
    vals = _numbers("sum", xs)
    if not vals:
        return None
    if all(type(v) is int for v in vals):
        return check_int(sum(vals))
    return float(sum(float(v) for v in vals))


SPECS = [
    FunctionSpec("array_agg", _array_agg, 1, 1, aggregate=True),
    FunctionSpec("avg", _avg, 1, 1, aggregate=True),
    FunctionSpec("bool_and", _bool_and, 1, 1, aggregate=True),
    FunctionSpec("bool_or", _bool_or, 1, 1, aggregate=True),
    FunctionSpec("count", _count, 1, 1, aggregate=True, star=True),
    FunctionSpec("json_object_agg", _json_object_agg, 2, 2, aggregate=True, agg_params=(0, 1)),
    FunctionSpec("max", _max, 1, 1, aggregate=True),
    FunctionSpec("median", _median, 1, 1, aggregate=True),
    FunctionSpec("min", _min, 1, 1, aggregate=True),
    FunctionSpec("string_agg", _string_agg, 2, 2, aggregate=True, agg_params=(0,)),
    FunctionSpec("sum", _sum, 1, 1, aggregate=True),
]
