"""Numeric built-ins: general math, pseudo-random numbers and trigonometry (Function Reference,
"Common Mathematical Functions").

Float results follow Go's math package: a mathematically invalid argument gives NaN (``sqrt(-2)``,
``ln(0)``, ``div(2.0, 0.0)``) and overflow gives ±Inf; int results cannot be NaN, so ``div(2, 0)`` is an
error. NULL arguments give NULL.
"""
from __future__ import annotations

import math
import random as _random
from typing import Any

from ..errors import BQLEvaluationError
from ..eval.operators import int_div, int_mod
from ..values import INT_MIN, check_int, type_name
from .registry import FunctionSpec
from .signatures import as_float, integer, number

NAN = math.nan
_rng = _random.Random()


def _float_fn(name: str, fn: Any) -> FunctionSpec:
    """A one-argument function on floats that maps domain errors to NaN and overflow to Inf."""

    def impl(x: Any) -> float:
        f = as_float(name, "x", x)
        try:
            return fn(f)
        except ValueError:
            return NAN
        except OverflowError:
            return math.inf
        except ZeroDivisionError:
            return math.inf

    return FunctionSpec(name, impl, 1, 1, null_on_null=True)


def _abs(x: Any) -> Any:
    v = number("abs", "x", x)
    if type(v) is int and v == INT_MIN:
        raise BQLEvaluationError("integer overflow in 'abs'")
    return abs(v)


def _int_or_float(name: str, fn: Any) -> FunctionSpec:
    """int stays int (unchanged); float gives float (Inf/NaN unchanged)."""

    def impl(x: Any) -> Any:
        v = number(name, "x", x)
        if type(v) is int or v != v or v in (math.inf, -math.inf):
            return v
        return float(fn(v))

    return FunctionSpec(name, impl, 1, 1, null_on_null=True)


def go_round(x: float) -> float:
    """Go's math.Round: half away from zero."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def _same_kind(name: str, y: Any, x: Any, py: str = "y", px: str = "x") -> tuple[Any, Any, bool]:
    """Both ints or both floats (the document: "x: same as y"; SensorBee's two-parameter numeric
    templates fail with "types ... do not match" for int with float)."""
    y = number(name, py, y)
    x = number(name, px, x)
    if type(y) is not type(x):
        raise BQLEvaluationError(
            f"function '{name}': '{py}' and '{px}' must have the same type, got '{type_name(y)}' and '{type_name(x)}'")
    return y, x, type(y) is int


def _div(y: Any, x: Any) -> Any:
    y, x, ints = _same_kind("div", y, x)
    if ints:
        return int_div(y, x)
    if x == 0.0:
        return NAN
    q = y / x
    return q if q != q or q in (math.inf, -math.inf) else float(math.trunc(q))


def _mod(y: Any, x: Any) -> Any:
    y, x, ints = _same_kind("mod", y, x)
    if ints:
        return int_mod(y, x)
    if x == 0.0:
        return NAN
    try:
        return math.fmod(y, x)
    except ValueError:
        return NAN


def _ln(x: Any) -> float:
    f = as_float("ln", "x", x)
    if not f > 0.0:
        return NAN
    return math.log(f)


def _log(a: Any, b: Any = None) -> float:
    if b is None:
        f = as_float("log", "x", a)
        return math.log10(f) if f > 0.0 else NAN
    base, f, _ = _same_kind("log", a, b, "b", "x")
    base, f = float(base), float(f)
    if not (f > 0.0 and base > 0.0) or base == 1.0:
        return NAN
    return math.log(f) / math.log(base)


def _power(a: Any, b: Any) -> float:
    x, y, _ = _same_kind("power", a, b, "a", "b")
    x, y = float(x), float(y)
    try:
        return math.pow(x, y)
    except ValueError:
        if x == 0.0 and y < 0:
            return math.inf
        return NAN
    except OverflowError:
        return math.inf if x > 0 or float(y).is_integer() and int(y) % 2 == 0 else -math.inf


def _sign(x: Any) -> int:
    v = number("sign", "x", x)
    if v > 0:
        return 1
    if v < 0:
        return -1
    return 0


def _width_bucket(x: Any, left: Any, right: Any, count: Any) -> int:
    xv = as_float("width_bucket", "x", x)
    lo = as_float("width_bucket", "left", left)
    hi = as_float("width_bucket", "right", right)
    n = integer("width_bucket", "count", count)
    if n <= 0:
        raise BQLEvaluationError("function 'width_bucket': 'count' must be greater than 0")
    if not lo < hi:
        raise BQLEvaluationError("function 'width_bucket': 'left' must be less than 'right'")
    if xv < lo:
        return 0
    if xv >= hi:
        return check_int(n + 1)
    return int(math.floor((xv - lo) / (hi - lo) * n)) + 1


def _random() -> float:
    return _rng.random()


def _setseed(x: Any) -> None:
    f = as_float("setseed", "x", x)
    if not -1.0 <= f <= 1.0:
        raise BQLEvaluationError("function 'setseed': 'x' must be between -1.0 and 1.0")
    _rng.seed(int(f * (1 << 63)))
    return None


def _cot(f: float) -> float:
    t = math.tan(f)
    if t == 0.0:
        return math.copysign(math.inf, t)
    return 1.0 / t


SPECS = [
    FunctionSpec("abs", _abs, 1, 1, null_on_null=True),
    _float_fn("cbrt", math.cbrt),
    _int_or_float("ceil", math.ceil),
    _float_fn("degrees", math.degrees),
    FunctionSpec("div", _div, 2, 2, null_on_null=True),
    _float_fn("exp", math.exp),
    _int_or_float("floor", math.floor),
    FunctionSpec("ln", _ln, 1, 1, null_on_null=True),
    FunctionSpec("log", _log, 1, 2, null_on_null=True),
    FunctionSpec("mod", _mod, 2, 2, null_on_null=True),
    FunctionSpec("pi", lambda: math.pi, 0, 0),
    FunctionSpec("power", _power, 2, 2, null_on_null=True),
    _float_fn("radians", math.radians),
    _int_or_float("round", go_round),
    FunctionSpec("sign", _sign, 1, 1, null_on_null=True),
    _float_fn("sqrt", lambda f: math.sqrt(f) if f >= 0 else NAN),
    _int_or_float("trunc", math.trunc),
    FunctionSpec("width_bucket", _width_bucket, 4, 4, null_on_null=True),
    FunctionSpec("random", _random, 0, 0, volatile=True),
    FunctionSpec("setseed", _setseed, 1, 1, volatile=True, null_on_null=True),
    _float_fn("acos", math.acos),
    _float_fn("asin", math.asin),
    _float_fn("atan", math.atan),
    _float_fn("cos", math.cos),
    _float_fn("cot", _cot),
    _float_fn("sin", math.sin),
    _float_fn("tan", math.tan),
]
