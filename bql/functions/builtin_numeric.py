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
from ..values import check_int, type_name
from . import go_math
from .registry import FunctionSpec
from .signatures import as_float, integer, number, type_error

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
    """SensorBee's abs has no int function: an int goes through ``math.Abs(float64(i))`` and back, so
    ints beyond 2**53 lose precision (``abs(9007199254740993)`` is 9007199254740992)."""
    v = number("abs", "x", x)
    if type(v) is int:
        f = abs(float(v))
        if f >= 9.223372036854775808e18:
            raise BQLEvaluationError("integer overflow in 'abs'")
        return int(f)
    return abs(v)


def _int_or_float(name: str, fn: Any) -> FunctionSpec:
    """int stays int (unchanged); float gives ``fn(float)`` (Go's float functions keep -0, Inf, NaN)."""

    def impl(x: Any) -> Any:
        v = number(name, "x", x)
        if type(v) is int:
            return v
        return fn(v)

    return FunctionSpec(name, impl, 1, 1, null_on_null=True)


def sensorbee_round(a: float) -> float:
    """SensorBee's round (numeric.go roundFunc): ``Ceil(a - 0.5)`` below zero, else ``Floor(a + 0.5)``
    in float arithmetic, so ``round(0.49999999999999994)`` is 1.0 and ``round(-0.4)`` is -0.0."""
    if a < 0:
        return go_math.ceil(a - 0.5)
    return go_math.floor(a + 0.5)


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
    return float(go_math.to_int64(y / x))  # float64(int64(a / b))


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
    return go_math.log(as_float("ln", "x", x))


def _log(a: Any, b: Any = None) -> float:
    """``log(x)`` is Go's Log10; ``log(b, x)`` is ``Log(x) / Log(b)`` in float arithmetic
    (``log(1, 8)`` is +Inf, ``log(0, 8)`` is -0.0)."""
    if b is None:
        return go_math.log10(as_float("log", "x", a))
    base, f, _ = _same_kind("log", a, b, "b", "x")
    num, den = go_math.log(float(f)), go_math.log(float(base))
    if den == 0.0:
        return NAN if num == 0.0 or num != num else math.copysign(math.inf, num) * math.copysign(1.0, den)
    return num / den


def _power(a: Any, b: Any) -> float:
    x, y, _ = _same_kind("power", a, b, "a", "b")
    return go_math.pow(float(x), float(y))


def _sign(x: Any) -> int:
    v = number("sign", "x", x)
    if v > 0:
        return 1
    if v < 0:
        return -1
    return 0


def _width_bucket(x: Any, left: Any, right: Any, count: Any) -> int:
    """SensorBee's order of checks (x, left, right, right > left, count, count > 0) and its bucket
    arithmetic: ``int64((x - left) / ((right - left) / count)) + 1``."""
    xv = as_float("width_bucket", "x", x)
    lo = as_float("width_bucket", "left", left)
    hi = as_float("width_bucket", "right", right)
    if not lo < hi:
        raise BQLEvaluationError("function 'width_bucket': 'left' must be less than 'right'")
    n = integer("width_bucket", "count", count)
    if n <= 0:
        raise BQLEvaluationError("function 'width_bucket': 'count' must be greater than 0")
    if xv < lo:
        return 0
    if xv >= hi:
        return check_int(n + 1)
    return go_math.to_int64((xv - lo) / ((hi - lo) / float(n))) + 1


def _random() -> float:
    return _rng.random()


def _setseed(x: Any) -> None:
    """Only a float seed (numeric.go setseedFuncTmpl: an int is "cannot interpret ... as float")."""
    if type(x) is not float:
        raise type_error("setseed", "x", "'float'", x)
    f = x
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
    _float_fn("cbrt", go_math.cbrt),
    _int_or_float("ceil", go_math.ceil),
    _float_fn("degrees", lambda f: f / math.pi * 180),
    FunctionSpec("div", _div, 2, 2, null_on_null=True),
    _float_fn("exp", math.exp),
    _int_or_float("floor", go_math.floor),
    FunctionSpec("ln", _ln, 1, 1, null_on_null=True),
    FunctionSpec("log", _log, 1, 2, null_on_null=True),
    FunctionSpec("mod", _mod, 2, 2, null_on_null=True),
    FunctionSpec("pi", lambda: math.pi, 0, 0),
    FunctionSpec("power", _power, 2, 2, null_on_null=True),
    _float_fn("radians", lambda f: f * math.pi / 180),
    _int_or_float("round", sensorbee_round),
    FunctionSpec("sign", _sign, 1, 1, null_on_null=True),
    _float_fn("sqrt", lambda f: math.sqrt(f) if f >= 0 else NAN),
    _int_or_float("trunc", go_math.trunc),
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
