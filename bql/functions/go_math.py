"""Go's ``math`` package where Python's differs, for the numeric built-ins to give SensorBee's bits.

SensorBee computes its numeric functions with Go's ``math`` (``bql/udf/builtin/numeric.go``). Where
CPython's ``math`` (the C library) gives another float, raises, or drops a sign, the function here gives
what Go gives:

- ``cbrt``: Go's own algorithm (FreeBSD's, one Newton step, < 0.667 ulp): ``Cbrt(27) = 3`` exactly,
  where glibc's ``cbrt(27)`` is ``3.0000000000000004``.
- ``ceil``, ``floor``, ``trunc`` stay floats and keep the sign of zero (``Ceil(-0.5) = -0``).
- ``log``/``log10``: ``Log(0) = -Inf``, ``Log(x < 0) = NaN``, ``Log(+Inf) = +Inf`` (Python raises).
- ``pow``: the special cases of ``math.Pow`` that Python raises on (``Pow(±0, y<0)``: ±Inf for an odd
  integer ``y``, else +Inf; a finite negative base with a non-integer exponent: NaN; overflow: ±Inf).
- ``to_int64``: Go's ``int64(f)`` conversion as the amd64 instruction (CVTTSD2SI) does it: toward zero,
  and NaN, ±Inf and anything outside int64 become -9223372036854775808.
"""
from __future__ import annotations

import math
import struct

INF = math.inf
NAN = math.nan
_INT64_MIN = -(1 << 63)
_INV_LN10 = 0.4342944819032518  # float64(1/Ln10), Go rounds the exact constant


def _bits(f: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", f))[0]


def _from_bits(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b & 0xFFFFFFFFFFFFFFFF))[0]


def cbrt(x: float) -> float:
    """Go's ``math.Cbrt`` (src/math/cbrt.go), step by step."""
    b1 = 715094163  # (682-0.03306235651)*2**20
    b2 = 696219795  # (664-0.03306235651)*2**20
    c = 5.42857142857142815906e-01  # 19/35
    d = -7.05306122448979611050e-01  # -864/1225
    e = 1.41428571428571436819e00  # 99/70
    f = 1.60714285714285720630e00  # 45/28
    g = 3.57142857142857150787e-01  # 5/14
    smallest_normal = 2.22507385850720138309e-308
    if x == 0 or x != x or x in (INF, -INF):
        return x
    sign = x < 0
    if sign:
        x = -x
    t = _from_bits(_bits(x) // 3 + (b1 << 32))
    if x < smallest_normal:
        t = float(1 << 54) * x
        t = _from_bits(_bits(t) // 3 + (b2 << 32))
    r = t * t / x
    s = c + r * t
    t *= g + f / (s + e + d / s)
    t = _from_bits((_bits(t) & (0xFFFFFFFFC << 28)) + (1 << 30))
    s = t * t
    r = x / s
    w = t + t
    r = (r - t) / (w + r)
    t = t + t * r
    return -t if sign else t


def _integral(x: float, fn) -> float:
    if x != x or x in (INF, -INF) or x == 0:
        return x
    return math.copysign(float(fn(x)), x)


def ceil(x: float) -> float:
    """``math.Ceil``: a float, ``Ceil(-0.5) = -0``."""
    return _integral(x, math.ceil)


def floor(x: float) -> float:
    """``math.Floor``: a float, ``Floor(-0) = -0``."""
    return _integral(x, math.floor)


def trunc(x: float) -> float:
    """``math.Trunc``: a float, ``Trunc(-0.5) = -0``."""
    return _integral(x, math.trunc)


def log(x: float) -> float:
    """``math.Log``."""
    if x != x or x < 0:
        return NAN
    if x == 0:
        return -INF
    if x == INF:
        return INF
    return math.log(x)


def log10(x: float) -> float:
    """``math.Log10``: ``log(x) * (1/Ln10)`` with Go's exactly rounded constant (not ``log10(x)``)."""
    return log(x) * _INV_LN10


def pow(x: float, y: float) -> float:
    """``math.Pow`` where Python's ``math.pow`` raises."""
    try:
        return math.pow(x, y)
    except ValueError:
        if x == 0 and y < 0:
            odd = y.is_integer() and int(y) % 2 == 1
            return math.copysign(INF, x) if odd else INF
        return NAN
    except OverflowError:
        odd = y.is_integer() and int(y) % 2 == 1
        return -INF if x < 0 and odd else INF


def to_int64(f: float) -> int:
    """Go's ``int64(f)`` on amd64: truncation; NaN, ±Inf and out-of-range give math.MinInt64."""
    if f != f or f in (INF, -INF) or not -9.223372036854775808e18 <= f < 9.223372036854775808e18:
        return _INT64_MIN
    return int(f)
