"""Aggregates through ``compile_aggregate``: NULL rules, result types, ORDER BY, non-aggregation params."""
from __future__ import annotations

import datetime as dt

import pytest

from sbpy.bql.errors import BQLError
from sbpy.bql.eval import Env, Scope, compile_aggregate
from sbpy.bql.parser import parse_expression
from sbpy.bql.runtime.processor import Tuple

T1 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)


def agg(text: str, rows: list[dict]):
    call = parse_expression(text)
    envs = [Env({"s": Tuple(r, T1)}) for r in rows]
    return compile_aggregate(call, Scope(("s",))).evaluate(envs)


def xs(*values):
    return [{"x": v} for v in values]


CASES = [
    ("sum(x)", xs(1, 2, 3), 6), ("sum(x)", xs(1.5, 2.5), 4.0), ("sum(x)", xs(3.0, 3), 6.0),
    ("sum(x)", xs(1, None, 3), 4), ("sum(x)", xs(None, None), None), ("sum(x)", [], None),
    ("count(*)", xs(1, None), 2), ("count(x)", xs(1, None, "a"), 2), ("count(x)", [], 0), ("count(*)", [], 0),
    ("avg(x)", xs(1, 2), 1.5), ("avg(x)", xs(2, None, 4), 3.0), ("avg(x)", xs(None), None),
    ("max(x)", xs(3, 1, 4), 4), ("max(x)", xs(3.0, 3), 3), ("min(x)", xs(3.0, 3, 2.3), 2.3),
    ("min(x)", xs(2.5, 3), 2.5), ("max(x)", xs(None, None), None), ("min(x)", xs(None, 2, -1), -1),
    ("median(x)", xs(5, 1, 2), 2.0), ("median(x)", xs(1, 2, 3, 10), 2.5), ("median(x)", [], None),
    ("bool_and(x)", xs(True, None, False), False), ("bool_and(x)", xs(True, None), True),
    ("bool_or(x)", xs(False, None, True), True), ("bool_or(x)", xs(None), None),
    ("array_agg(x)", xs(1, None, "a"), [1, None, "a"]), ("array_agg(x)", [], None),
    ("array_agg(x ORDER BY x)", xs(3, 1, 2), [1, 2, 3]), ("array_agg(x ORDER BY x DESC)", xs(3, 1, 2), [3, 2, 1]),
    ("array_agg(x ORDER BY x)", xs(2, None, 1), [None, 1, 2]),  # SensorBee data.Less: NULL is smallest
    ("array_agg(x ORDER BY x DESC)", xs(2, None, 1), [2, 1, None]),
    ("array_agg(a ORDER BY b DESC, a)", [{"a": 1, "b": 5}, {"a": 2, "b": 6}, {"a": 3, "b": 5}], [2, 1, 3]),
    ("string_agg(x, \",\")", xs("a", None, "b"), "a,b"), ("string_agg(x, \",\")", xs(None), ""),
    ("string_agg(name, sep ORDER BY name)", [{"name": "b", "sep": "+"}, {"name": "a", "sep": "+"}], "a+b"),
    ("string_agg(first || \" \" || last, \",\" ORDER BY last)",
     [{"first": "John", "last": "Smith"}, {"first": "Anna", "last": "Bauer"}], "Anna Bauer,John Smith"),
    ("json_object_agg(k, v)", [{"k": "a", "v": None}, {"k": "b", "v": 2}], {"a": None, "b": 2}),
    ("json_object_agg(k, v)", [{"k": None, "v": None}, {"k": "b", "v": 2}], {"b": 2}),
    ("json_object_agg(k, v)", [], None),
    ("array_agg(*)", xs(1, None), [{"x": 1}, {"x": None}]),  # a '*' argument is the row's map
    ("count(s:*)", xs(1, None), 2), ("count(*)", [{"y": 1}], 1),
    # int64 sums wrap around as Go's do (SensorBee aggregate_test.go: "the integer case is commutative")
    ("sum(x)", xs(9223372036854775807, 1), -9223372036854775808),
    ("sum(x)", xs(9223372036854775807, 10, -20), 9223372036854775797),
    ("sum(x)", xs(10, -20, 9223372036854775807), 9223372036854775797),
    ("sum(x)", xs(-9223372036854775808, -1, 2), -9223372036854775807),
    # float sums add in row order (the same values in another order overflow to +Inf)
    ("sum(x)", xs(1.7976931348623157e308 / 4, -1.7976931348623157e308 / 2, 1.7976931348623157e308),
     0.75 * 1.7976931348623157e308),
    ("sum(x)", xs(1.7976931348623157e308 / 4, 1.7976931348623157e308, -1.7976931348623157e308 / 2), float("inf")),
]


@pytest.mark.parametrize("text,rows,want", CASES)
def test_aggregate(text, rows, want):
    got = agg(text, rows)
    assert type(got) is type(want) and got == want


@pytest.mark.parametrize("text,rows", [
    ("sum(x)", xs(1, "a")), ("sum(*)", xs(1)), ("avg(x)", xs(True)), ("max(x)", xs("a")), ("bool_and(x)", xs(1)),
    ("json_object_agg(k, v)", [{"k": None, "v": 1}]), ("json_object_agg(k, v)", [{"k": "a", "v": 1}] * 2),
    ("json_object_agg(k, v)", [{"k": 1, "v": 1}]), ("string_agg(x, \",\")", xs(1)),
    ("sum(x)", [{"y": 1}]),
])
def test_aggregate_errors(text, rows):
    with pytest.raises(BQLError):
        agg(text, rows)


@pytest.mark.parametrize("text", ["abs(x)", "sum(x, 1)", "sum(max(x))", "count()"])
def test_compile_errors(text):
    with pytest.raises(BQLError):
        compile_aggregate(parse_expression(text), Scope(("s",)))


def test_float_sums_add_left_to_right_as_sensorbee():
    """Go adds float64s left to right; Python 3.12's ``sum`` of floats is compensated, so ``sum`` and
    ``avg`` go through ``float_sum``, which must not be: 1e16 + 1.0 rounds back to 1e16."""
    from sbpy.bql.functions.builtin_aggregate import float_sum, naive_float_sum

    rows = [1e16, 1.0, -1e16, 1.0]
    assert float_sum(rows) == naive_float_sum(rows) == 1.0  # compensated: 2.0
    assert agg("sum(x)", xs(*rows)) == 1.0
    assert agg("avg(x)", xs(*rows)) == 0.25
    assert agg("sum(x)", xs(1e16, 1, -1e16)) == 0.0  # an int converted, then added in order
    assert naive_float_sum([0.1] * 10) == 0.9999999999999999
