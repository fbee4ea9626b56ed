"""The eleven built-in aggregates (Function Reference, "Aggregate Functions").

Each gets its aggregation parameters as lists of per-row values (already in ORDER BY order). Except for
``count``, an empty input gives NULL; NULL inputs are skipped except by ``array_agg``; an input with
only NULLs gives NULL (but ``string_agg`` of only NULLs is ``""``). ``max``/``min`` take ints and floats
(or only timestamps) and keep the type of the winning value, an int winning a tie (``max(3.0, 3)`` and
``max(3, 3.0)`` are both ``3``); ``sum`` is int unless a float is present; ``avg``/``median`` are float.
The rules are SensorBee's bql/udf/builtin/aggregate.go, ties and NaN included.
"""
from __future__ import annotations

import datetime as _dt
import math
import sys
from collections.abc import Iterable
from functools import reduce
from operator import add
from typing import Any

from ..errors import BQLEvaluationError
from ..values import INT_MIN
from .builtin_string import join_written
from .registry import FunctionSpec
from .signatures import boolean, number, string, type_error


def _array_agg(xs: list) -> Any:
    return list(xs) if xs else None


_NUMBER_TYPES = frozenset((int, float))
_INT_TYPE = frozenset((int,))


def naive_float_sum(values: Iterable[float], start: float = 0.0) -> float:
    """``start + v1 + v2 + ...`` in IEEE doubles, left to right: SensorBee's float64 accumulation."""
    return reduce(add, values, start)


# the left-to-right sum of floats every float ``sum`` / ``avg`` is: the built-in ``sum`` on CPython 3.11
# (C doubles, left to right, ~2x faster), ``naive_float_sum`` from 3.12, whose ``sum`` of floats is
# compensated (more accurate than SensorBee, so not SensorBee's value)
float_sum: Any = sum if sys.version_info < (3, 12) else naive_float_sum


def _numbers(fn: str, xs: list) -> list:
    """The non-NULL values of ``xs``, all numbers (else the first other value's error); ``xs`` itself
    when it holds numbers only (callers do not change it)."""
    if _NUMBER_TYPES.issuperset(map(type, xs)):
        return xs
    return [number(fn, "x", x) for x in xs if x is not None]


def _avg(xs: list) -> Any:
    vals = _numbers("avg", xs)
    if not vals:
        return None
    return float_sum(map(float, vals)) / len(vals)


def _bool_and(xs: list) -> Any:
    vals = [boolean("bool_and", "x", x) for x in xs if x is not None]
    return all(vals) if vals else None


def _bool_or(xs: list) -> Any:
    vals = [boolean("bool_or", "x", x) for x in xs if x is not None]
    return any(vals) if vals else None


def _count(xs: list) -> int:
    return len(xs) - xs.count(None)


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


_MAX_FLOAT = 1.7976931348623157e308
_INT64_MAX = (1 << 63) - 1


def _extreme(fn: str, xs: list, larger: bool) -> Any:
    """SensorBee's maxFunc/minFunc: when the first non-NULL value is a timestamp, every value must be
    one; otherwise the largest int and the largest float are kept apart (starting from MinInt64 and
    -MaxFloat64, so NaN never wins) and the int wins when ``float64(maxInt) >= maxFloat``."""
    vals = [x for x in xs if x is not None]
    if not vals:
        return None
    if type(vals[0]) is _dt.datetime:
        best = vals[0]
        for v in vals:
            if type(v) is not _dt.datetime:
                raise type_error(fn, "x", "'timestamp'", v)
            if (v > best) if larger else (v < best):
                best = v
        return best
    sign = 1 if larger else -1
    best_int = -sign * _INT64_MAX - (1 if larger else 0)
    best_float = -sign * _MAX_FLOAT
    for v in vals:
        t = type(v)
        if t is int:
            if (v > best_int) if larger else (v < best_int):
                best_int = v
        elif t is float:
            if (v > best_float) if larger else (v < best_float):
                best_float = v
        else:
            raise type_error(fn, "x", "'int' or 'float'", v)
    if (float(best_int) >= best_float) if larger else (float(best_int) <= best_float):
        return best_int
    return best_float


def _max(xs: list) -> Any:
    return _extreme("max", xs, True)


def _min(xs: list) -> Any:
    return _extreme("min", xs, False)


def _median(xs: list) -> Any:
    # Go's sort.Float64s puts NaN first
    vals = sorted((float(v) for v in _numbers("median", xs)), key=lambda f: (not math.isnan(f), f if f == f else 0.0))
    n = len(vals)
    if n == 0:
        return None
    mid = n // 2
    if n % 2:
        return vals[mid]
    return (vals[mid - 1] + vals[mid]) / 2.0


def _string_agg(xs: list, sep: Any) -> Any:
    """SensorBee's stringAggFuncTmpl: the separator must be a string (NULL is an error, checked first:
    also with no rows), no rows give NULL, rows whose values are all NULL give ``""``, and the separator
    is written only after something (``join_written``: ``["", "a"]`` gives ``"a"``). (Without GROUP BY
    the separator reads no row, so ``CompiledAggregate`` evaluates it for an empty window too.)"""
    sep = string("string_agg", "sep", sep)
    if not xs:
        return None
    return join_written(sep, [string("string_agg", "x", x) for x in xs if x is not None])


_INT64_MASK = (1 << 64) - 1


def wrap_int64(total: int) -> int:
    """An integer sum as Go's int64 additions leave it: wrapped around on overflow (SensorBee's sumFunc
    keeps the wrapped sum, so ``sum`` of MaxInt64, 10, -20 is MaxInt64 - 10 in any order)."""
    return ((total - INT_MIN) & _INT64_MASK) + INT_MIN


def _sum(xs: list) -> Any:
    vals = _numbers("sum", xs)
    if not vals:
        return None
    if _INT_TYPE.issuperset(map(type, vals)):
        return wrap_int64(sum(vals))
    return float(float_sum(map(float, vals)))


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
