"""Built-in scalar functions: the Function Reference examples and edge cases, plus the registry."""
from __future__ import annotations

import math

import pytest

from sbpy.bql.errors import BQLError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.functions import (
    AlreadyRegisteredError, FunctionSpec, NotRegisteredError, Registry, builtin_registry,
)
from sbpy.bql.parser import parse_expression


def ev(text: str):
    return evaluate_constant(parse_expression(text))


CASES = [
    # numeric (reference examples)
    ("abs(-17.4)", 17.4), ("abs(-7)", 7), ("cbrt(27.0)", 3.0), ("cbrt(-3)", -1.4422495703074083),
    ("ceil(1.3)", 2.0), ("ceil(-1.7)", -1.0), ("ceil(3)", 3), ("degrees(3.141592653589793)", 180.0),
    ("div(9, 4)", 2), ("div(9.3, 4.5)", 2.0), ("div(9, -4)", -2), ("div(-9, 4)", -2),
    ("exp(1.0)", 2.718281828459045), ("floor(1.3)", 1.0), ("floor(-1.7)", -2.0), ("floor(-2)", -2),
    ("ln(2)", 0.6931471805599453), ("log(100)", 2.0), ("log(2.5, 6.25)", 2.0), ("log(2, 8)", 3.0),
    ("mod(9, 4)", 1), ("mod(-9, 4)", -1), ("mod(9, -4)", 1), ("pi()", 3.141592653589793),
    ("power(9.0, 3.0)", 729.0), ("power(2, -1)", 0.5), ("power(2, 2)", 4.0), ("radians(180)", 3.141592653589793),
    ("round(1.3)", 1.0), ("round(0.5)", 1.0), ("round(-1.7)", -2.0), ("round(-0.5)", -1.0),
    ("round(2.5)", 3.0), ("round(7)", 7), ("sign(2)", 1), ("sign(-42.8)", -1), ("sign(0)", 0),
    ("sqrt(2)", 1.4142135623730951), ("trunc(1.3)", 1.0), ("trunc(-1.7)", -1.0), ("trunc(5)", 5),
    ("width_bucket(5, 0, 10, 5)", 3), ("width_bucket(-1, 0, 10, 5)", 0), ("width_bucket(10, 0, 10, 5)", 6),
    ("width_bucket(0, 0, 10, 5)", 1), ("sin(0)", 0.0), ("cos(0)", 1.0), ("tan(0)", 0.0),
    ("asin(1)", 1.5707963267948966), ("acos(1)", 0.0), ("atan(0)", 0.0), ("abs(NULL)", None),
    ("setseed(0.5)", None),
    # strings (reference examples)
    ('bit_length("über")', 40), ('btrim("  trim  ")', "trim"), ('btrim("xyxtrimyyx", "xy")', "trim"),
    ('char_length("über")', 4), ('concat("abc", NULL, "22")', "abc22"), ('concat(NULL)', ""),
    ('concat_ws(":", "abc", NULL, "22")', "abc:22"), ('concat_ws(NULL, "a")', None),
    ('format("%s-%d", "abc", 22)', "abc-22"), ('format("%05.2f|%x|%v|%5s|%-3d|", 3.14159, 255, [1, 2], "ab", 7)',
                                                 "03.14|323535|[1,2]|   ab|7  |"),  # data.Int and data.Array are Stringers
    ('format("%d", "x")', "%!d(string=x)"), ('format("%d %d", 1)', "1 %!d(MISSING)"),
    ('lower("ÜBer")', "über"), ('ltrim("  trim  ")', "trim  "), ('ltrim("xyxtrimyyx", "xy")', "trimyyx"),
    ('md5("abc")', "900150983cd24fb0d6963f7d28e17f72"), ('octet_length("über")', 5),
    ('overlay("Txxxxas", "hom", 1)', "Thomxas"), ('overlay("Txxxxas", "hom", 1, 4)', "Thomas"),
    ('rtrim("  trim  ")', "  trim"), ('rtrim("xyxtrimyyx", "xy")', "xyxtrim"),
    ('sha1("abc")', "a9993e364706816aba3e25717850c26c9cd0d89d"),
    ('sha256("abc")', "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ('strpos("high", "ig")', 1), ('strpos("日本語", "語")', 6), ('substring("Thomas", "...$")', "mas"),
    ('substring("Thomas", 1)', "homas"), ('substring("Thomas", 1, 3)', "hom"), ('substring("Thomas", "z")', ""),
    ('upper("ÜBer")', "ÜBER"), ('upper("ß")', "ß"), ('lower(NULL)', None),
    # time, array, other
    ('distance_us("2016-02-09T05:40:25.123Z"::timestamp, "2016-02-09T05:41:25.456Z"::timestamp)', 60333000),
    ('distance_us("2016-02-09T05:41:25.456Z"::timestamp, "2016-02-09T05:40:25.123Z"::timestamp)', -60333000),
    ('array_length([3, NULL, "foo"])', 3), ('array_length([])', 0), ('coalesce(NULL, 17, "foo")', 17),
    ("coalesce(NULL, NULL)", None),
]


@pytest.mark.parametrize("text,want", CASES)
def test_function(text, want):
    got = ev(text)
    assert type(got) is type(want)
    if isinstance(want, float):
        assert got == pytest.approx(want, abs=1e-12)
    else:
        assert got == want


@pytest.mark.parametrize("text", [
    "sqrt(-2)", "ln(-1.0)", "log(-1)", "div(2.0, 0.0)", "mod(2.0, 0.0)", "acos(2)", "power(-8.0, 0.5)",
])
def test_invalid_float_arguments_give_nan(text):
    assert math.isnan(ev(text))


@pytest.mark.parametrize("text", [
    "div(2, 0)", "mod(2, 0)", 'abs("a")', "width_bucket(5, -1.5, 3.0, 0)", "setseed(2.0)", 'concat("a", 2)',
    'concat_ws(",")', 'format("abc")', 'substring("Thomas", "?")', 'substring("Thomas", -1)',
    'array_length("abc")', "coalesce()", "pi(1)", "abs()", "sign(true)", 'lower(1)', "nosuch(1)",
    'distance_us(1, 2)', "abs(-9223372036854775807 - 1)",
])
def test_function_errors(text):
    with pytest.raises(BQLError):
        ev(text)


def test_random_range_and_setseed_repeats():
    ev("setseed(0.25)")
    a = [ev("random()") for _ in range(3)]
    ev("setseed(0.25)")
    assert [ev("random()") for _ in range(3)] == a
    assert all(0.0 <= x < 1.0 for x in a)


def test_registry_is_case_insensitive_and_generic():
    reg: Registry = Registry("udsf")
    reg.register("Foo", 1)
    assert reg.lookup("FOO") == 1 and "foo" in reg and reg.get("nope") is None
    with pytest.raises(AlreadyRegisteredError, match="udsf 'foo' is already registered"):
        reg.register("foo", 2)
    with pytest.raises(NotRegisteredError, match=r"udsf 'fooo' is not registered \(did you mean 'foo'\?\)"):
        reg.lookup("fooo")
    assert reg.list() == {"foo": 1}
    assert reg.unregister("FOO") == 1 and len(reg) == 0
    with pytest.raises(NotRegisteredError):
        reg.unregister("foo")


def test_builtin_registry_copy_is_isolated():
    reg = builtin_registry(copy=True)
    reg.register("twice", FunctionSpec("twice", lambda x: 2 * x, 1, 1))
    assert "twice" in reg and "twice" not in builtin_registry()
    expected = {"abs", "cbrt", "ceil", "degrees", "div", "exp", "floor", "ln", "log", "mod", "pi", "power",
                "radians", "round", "sign", "sqrt", "trunc", "width_bucket", "random", "setseed", "acos",
                "asin", "atan", "cos", "cot", "sin", "tan", "bit_length", "btrim", "char_length", "concat",
                "concat_ws", "format", "lower", "ltrim", "md5", "octet_length", "overlay", "rtrim", "sha1",
                "sha256", "strpos", "substring", "upper", "distance_us", "clock_timestamp", "now",
                "array_length", "coalesce", "array_agg", "avg", "bool_and", "bool_or", "count",
                "json_object_agg", "max", "median", "min", "string_agg", "sum",
                "encode_json", "decode_json", "blob_to_raw_string",  # these three: SensorBee init.go
                "str"}  # SensorBee bql/udf/function_registry.go init
    timeplus = {"latest", "earliest", "any", "max_k", "min_k", "lag", "emit_version", "now64"}  # docs/timeplus.md
    assert set(builtin_registry().list()) == expected | timeplus


def test_udf_failure_is_an_evaluation_error():
    from sbpy.bql.eval import Scope, compile_expr

    reg = builtin_registry(copy=True)
    reg.register("boom", FunctionSpec("boom", lambda: 1 / 0, 0, 0))
    f = compile_expr(parse_expression("boom()"), Scope((), reg))
    with pytest.raises(BQLError, match="function 'boom' failed"):
        f(None)
