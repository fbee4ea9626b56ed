"""``sbpy.bql.functions.go_math``: Go's math where CPython's differs (cbrt, signed zeros, Log, Pow,
int64 conversion), checked against exact arithmetic and Go's documented special cases."""
from __future__ import annotations

import math
from decimal import Decimal, getcontext

from hypothesis import given
from hypothesis import strategies as st
from sbpy.bql.functions import go_math

FINITE = st.floats(allow_nan=False, allow_infinity=False)


@given(st.integers(-(1 << 17), 1 << 17))
def test_cbrt_of_a_perfect_cube_is_exact(n):
    assert go_math.cbrt(float(n) ** 3) == float(n)


@given(FINITE.filter(lambda x: x != 0))
def test_cbrt_is_within_one_ulp_of_the_real_cube_root(x):
    getcontext().prec = 60
    exact = abs(Decimal(x)) ** (Decimal(1) / Decimal(3))
    got = go_math.cbrt(x)
    assert math.copysign(1.0, got) == math.copysign(1.0, x)
    assert abs(Decimal(abs(got)) - exact) <= Decimal(math.ulp(abs(got)))


def test_cbrt_special_values():
    assert math.copysign(1.0, go_math.cbrt(-0.0)) == -1.0
    assert go_math.cbrt(math.inf) == math.inf and go_math.cbrt(-math.inf) == -math.inf
    assert math.isnan(go_math.cbrt(math.nan))


@given(FINITE)
def test_ceil_floor_trunc_are_floats_keeping_the_sign_of_zero(x):
    for go, py in ((go_math.ceil, math.ceil), (go_math.floor, math.floor), (go_math.trunc, math.trunc)):
        got = go(x)
        assert type(got) is float and got == py(x)
        if got == 0:
            assert math.copysign(1.0, got) == math.copysign(1.0, x)


def test_log_special_values():
    assert go_math.log(0.0) == -math.inf and go_math.log10(0.0) == -math.inf
    assert math.isnan(go_math.log(-1.0)) and go_math.log(math.inf) == math.inf
    assert [go_math.log10(10.0 ** k) for k in range(15)] == [float(k) for k in range(15)]


def test_pow_special_values():
    assert go_math.pow(-0.0, -1.0) == -math.inf and go_math.pow(0.0, -1.0) == math.inf
    assert go_math.pow(-0.0, -2.0) == math.inf
    assert math.isnan(go_math.pow(-8.0, 0.5))
    assert go_math.pow(10.0, 400.0) == math.inf and go_math.pow(-10.0, 401.0) == -math.inf


@given(st.floats())
def test_to_int64_truncates_or_gives_min_int64(f):
    got = go_math.to_int64(f)
    if math.isfinite(f) and -(2.0 ** 63) <= f < 2.0 ** 63:
        assert got == math.trunc(f)
    else:
        assert got == -(1 << 63)
