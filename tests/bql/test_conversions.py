"""CAST: every conversion of the "Data Types and Conversions" chapter, plus float/timestamp formats."""
from __future__ import annotations

import datetime as dt
import math

import pytest

from sbpy.bql.conversions import format_float, format_timestamp, parse_timestamp
from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.values import cast

UTC = dt.timezone.utc
T0 = dt.datetime(1970, 1, 1, tzinfo=UTC)
ZERO = dt.datetime(1, 1, 1, tzinfo=UTC)


def ts(s: str) -> dt.datetime:
    return parse_timestamp(s)


OK = [
    # to bool
    (0, "bool", False), (2, "bool", True), (0.0, "bool", False), (-0.0, "bool", False),
    (math.nan, "bool", False), (math.inf, "bool", True), (" tRuE ", "bool", True), ("OFF", "bool", False),
    ("y", "bool", True), ("0", "bool", False), (b"", "bool", False), (b"x", "bool", True),
    (ZERO, "bool", False), (T0, "bool", True), ([], "bool", False), ([0], "bool", True),
    ({}, "bool", False), ({"a": 1}, "bool", True), (True, "bool", True),
    # to int
    (True, "int", 1), (False, "int", 0), (1.5, "int", 1), (-1.5, "int", -1), (-2.01, "int", -2),
    ("1", "int", 1), ("-24", "int", -24), ("+7", "int", 7), (ts("2016-01-18T09:22:40.123456Z"), "int", 1453108960),
    (ZERO, "int", -62135596800), (ts("1969-12-31T23:59:59.5Z"), "int", -1),
    # to float
    (True, "float", 1.0), (1, "float", 1.0), ("1.1", "float", 1.1), ("1e-1", "float", 0.1),
    ("-1e+1", "float", -10.0), (ts("1970-01-02T00:00:00.000001Z"), "float", 86400.000001),
    # to string
    (True, "string", "true"), (-24, "string", "-24"), (1.2, "string", "1.2"), (1e10, "string", "1e+10"),
    (0.0, "string", "0"), (b"ab", "string", "YWI="), ([1, "2", 3.4], "string", '[1,"2",3.4]'),
    ({"a": 1}, "string", '{"a":1}'), (ts("1970-01-01T00:00:00.000001Z"), "string", "1970-01-01T00:00:00.000001Z"),
    # to blob
    ("YWI=", "blob", b"ab"), (b"x", "blob", b"x"),
    # to timestamp
    (0, "timestamp", T0), (1453108960, "timestamp", ts("2016-01-18T09:22:40Z")),
    (0.000001, "timestamp", ts("1970-01-01T00:00:00.000001Z")),
    (86400.000001, "timestamp", ts("1970-01-02T00:00:00.000001Z")),
    ("1970-01-01T09:00:02+09:00", "timestamp", ts("1970-01-01T00:00:02Z")),
    ("1970-01-01T00:00:00.123456789Z", "timestamp", ts("1970-01-01T00:00:00.123456Z")),
]


@pytest.mark.parametrize("value,target,want", OK)
def test_cast(value, target, want):
    got = cast(value, target)
    assert type(got) is type(want) and got == want


@pytest.mark.parametrize("target", ["bool", "int", "float", "string", "blob", "timestamp", "BOOL"])
def test_null_casts_to_null(target):
    assert cast(None, target) is None


BAD = [
    ("", "bool"), ("tr ue", "bool"), ("2", "bool"), ("1.0", "int"), ("1a", "int"), ("", "int"),
    (" 1", "int"), ("1_0", "int"), ("9223372036854775808", "int"), (1e19, "int"), (math.nan, "int"),
    ([1], "int"), ("abc", "float"), ("1e400", "float"), ("1 ", "float"), (1, "blob"), ("!!", "blob"),
    ("hoge", "timestamp"), ("2016-01-18", "timestamp"), (True, "timestamp"), (1e300, "timestamp"),
    (1, "array"), ({"a": 1}, "map"), (1, "null"), (None, "array"),
]


@pytest.mark.parametrize("value,target", BAD)
def test_cast_errors(value, target):
    with pytest.raises(BQLEvaluationError):
        cast(value, target)


@pytest.mark.parametrize("f,text", [
    (1.2, "1.2"), (1e10, "1e+10"), (0.0, "0"), (-0.0, "-0"), (123456.0, "123456"), (1234567.0, "1.234567e+06"),
    (0.0001, "0.0001"), (0.00001, "1e-05"), (-2.5, "-2.5"), (1e21, "1e+21"), (math.nan, "NaN"),
    (math.inf, "+Inf"), (-math.inf, "-Inf"), (100.0, "100"), (9000000000000012288.0, "9.000000000000012e+18"),
])
def test_format_float_like_go(f, text):
    assert format_float(f) == text


def test_format_timestamp_trims_fraction():
    assert format_timestamp(T0) == "1970-01-01T00:00:00Z"
    assert format_timestamp(T0 + dt.timedelta(microseconds=123000)) == "1970-01-01T00:00:00.123Z"
    assert format_timestamp(ZERO) == "0001-01-01T00:00:00Z"
