"""Output labels and AS paths of the select list (no evaluator needed)."""
import pytest

from sbpy.bql.ast import (
    AliasPath, BinaryOp, FieldRef, FunctionCall, IndexStep, KeyStep, Literal, Projection, TimestampRef,
    Wildcard,
)
from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.projection import SelectList, assign_path, default_label


def field(*keys, stream=None):
    return FieldRef(tuple(KeyStep(k) for k in keys), stream)


def test_default_labels():
    assert default_label(field("a"), 0) == "a"
    assert default_label(field("price", stream="s"), 3) == "price"
    assert default_label(field("A"), 1) == "col_1"  # label regex needs a lower-case first letter
    assert default_label(field("a", "b"), 2) == "col_2"
    assert default_label(FieldRef((KeyStep("a", bracket=True),)), 0) == "col_0"
    assert default_label(FunctionCall("abs", (field("a"),)), 4) == "abs"
    assert default_label(TimestampRef("s"), 5) == "ts"
    assert default_label(BinaryOp("+", field("a"), Literal(1)), 1) == "col_1"


def test_assign_path_pads_arrays_and_builds_maps():
    row = {}
    assign_path(row, (KeyStep("x"), KeyStep("y"), IndexStep(3), KeyStep("z")), 7)
    assign_path(row, (KeyStep("x"), KeyStep("foo")), "bar")
    assign_path(row, (KeyStep("x"), KeyStep("y"), IndexStep(0)), 17)
    assert row == {"x": {"y": [17, None, None, {"z": 7}], "foo": "bar"}}


def test_assign_path_conflict_is_an_error():
    row = {}
    assign_path(row, (KeyStep("x"), KeyStep("y")), 1)
    with pytest.raises(BQLEvaluationError):
        assign_path(row, (KeyStep("x"), IndexStep(1)), 2)


def test_assign_path_does_not_mutate_shared_input():
    shared = {"c": 1}
    row = {"a": shared}
    assign_path(row, (KeyStep("a"), KeyStep("d")), 2)
    assert shared == {"c": 1} and row == {"a": {"c": 1, "d": 2}}


class _Env:
    def __init__(self, tuples):
        self.tuples = tuples


def _const(value):
    return lambda env: value


def _compile(expr):
    # a stand-in for compile_expr: literals and top-level fields of alias "l"
    if isinstance(expr, Literal):
        return _const(expr.value)
    return lambda env: env.tuples[expr.stream or "l"].data[expr.path[0].key]


def test_explicit_keys_beat_wildcard_keys_and_as_star_merges():
    env = _Env({"l": Tuple({"a": 1, "b": 2, "m": {"k": 9}}, None), "r": Tuple({"c": 3, "b": 5}, None)})
    items = (
        Projection(field("c", stream="r"), AliasPath((KeyStep("b"),))),
        Projection(Wildcard("l")),
        Projection(field("m", stream="l"), AliasPath(star=True)),
    )
    out = SelectList(items, ("l", "r"), _compile).evaluate(env)
    assert out == {"a": 1, "b": 3, "m": {"k": 9}, "k": 9}


def test_wildcard_as_alias_nests_and_as_star_needs_a_map():
    env = _Env({"l": Tuple({"a": 1}, None)})
    out = SelectList((Projection(Wildcard(), AliasPath((KeyStep("foo"),))),), ("l",), _compile).evaluate(env)
    assert out == {"foo": {"a": 1}}
    bad = SelectList((Projection(field("a"), AliasPath(star=True)),), ("l",), _compile)
    with pytest.raises(BQLEvaluationError):
        bad.evaluate(env)
