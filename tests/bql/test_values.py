"""Values: type names, equality, ordering, multiset keys, JSON."""
from __future__ import annotations

import datetime as dt
import math
import pickle

import pytest

from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.values import (
    MISSING, bql_equal, bql_less, from_json, multiset_key, sort_key, to_json, type_name,
)

UTC = dt.timezone.utc
T0 = dt.datetime(1970, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize("value,name", [
    (None, "null"), (True, "bool"), (1, "int"), (1.5, "float"), ("s", "string"), (b"x", "blob"),
    (T0, "timestamp"), ([1], "array"), ({"a": 1}, "map"),
])
def test_type_name(value, name):
    assert type_name(value) == name


def test_missing_is_a_pickle_stable_singleton():
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING
    assert repr(MISSING) == "MISSING"


@pytest.mark.parametrize("a,b,want", [
    (1, 1.0, True), (1, "1", False), (None, None, None), (3, None, None), (True, 1, False),
    ([1, 2], [1, 2], True), ([1, 2], [2, 1], False), ([None], [None], True),
    ({"a": None}, {"a": None}, True), ({"a": 2, "b": 3.0}, {"b": 3, "a": 2.0}, True),
    ({"a": 1}, {"a": 1, "b": 2}, False), (math.nan, math.nan, False), ([math.nan], [math.nan], False),
    (b"a", b"a", True), (T0, T0, True), ("a", b"a", False),
])
def test_bql_equal(a, b, want):
    assert bql_equal(a, b) is want


@pytest.mark.parametrize("a,op,b,want", [
    (1, "<", 2.1, True), ("abc", ">", "def", False), (T0, "<=", T0 + dt.timedelta(seconds=1), True),
    (None, ">", "a", None), (math.nan, "<", 1.0, False), (2, ">=", 2.0, True),
])
def test_bql_less(a, op, b, want):
    assert bql_less(a, b, op) is want


@pytest.mark.parametrize("a,b", [(True, 1), ([1], [2]), ({}, {}), (1, "a"), (b"a", b"b")])
def test_bql_less_errors_on_incomparable(a, b):
    with pytest.raises(BQLEvaluationError):
        bql_less(a, b, "<")


def test_multiset_key_equalities():
    assert multiset_key(2) == multiset_key(2.0)
    assert multiset_key({"a": [None, 2]}) == multiset_key({"a": [None, 2.0]})
    assert multiset_key(True) != multiset_key(1)
    assert multiset_key("1") != multiset_key(1)
    assert multiset_key(b"a") != multiset_key("a")
    nan = math.nan
    assert multiset_key(nan) != multiset_key(nan)
    assert multiset_key([nan]) != multiset_key([nan])
    hash(multiset_key({"a": {"b": [1, {"c": None}]}}))


def test_sort_key_nulls_last_and_mixed_types():
    values = [3, None, 1.5, "b", "a", None, 2]
    assert sorted(values, key=sort_key) == [1.5, 2, 3, "a", "b", None, None]


def test_to_json():
    ts = dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC)
    assert to_json([2.0, 1, math.nan, math.inf, None, True]) == "[2.0,1,null,null,null,true]"
    assert to_json({"t": T0 + dt.timedelta(seconds=1), "u": ts}) == \
        '{"t":"1970-01-01T00:00:01Z","u":"1970-01-01T00:00:00.000001Z"}'
    assert to_json(b"ab") == '"YWI="'
    assert to_json("日本") == '"日本"'


def test_from_json():
    assert from_json('{"a": 2, "b": 2.0, "c": [1e3]}') == {"a": 2, "b": 2.0, "c": [1000.0]}
    assert type(from_json("2.0")) is float
    big = from_json("[9223372036854775807, 9223372036854775808, 123456789012345678901234]")
    assert big[0] == 9223372036854775807 and type(big[0]) is int
    assert type(big[1]) is float and type(big[2]) is float
    assert from_json(b"null") is None
    with pytest.raises(BQLEvaluationError):
        from_json("{")
