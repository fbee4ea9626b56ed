"""The evaluator over rows: paths, MISSING, wildcards, ts(), CASE, scopes, folding, EVAL ON."""
from __future__ import annotations

import datetime as dt

import pytest

from sbpy.bql.ast import FunctionCall
from sbpy.bql.errors import BQLAnalysisError, BQLError, BQLEvaluationError
from sbpy.bql.eval import (
    Env, Scope, compile_expr, contains_aggregate, evaluate_constant, is_aggregate_call, is_constant,
    is_volatile,
)
from sbpy.bql.parser import parse_expression
from sbpy.bql.runtime.processor import Tuple

UTC = dt.timezone.utc
T1 = dt.datetime(2020, 1, 1, tzinfo=UTC)
DOC = {
    "foo": [
        {"hoge": [{"a": 1, "b": 2}, {"a": 3, "b": 4}], "bar": 5},
        {"hoge": [{"a": 5, "b": 6}, {"a": 7, "b": 8}], "bar": 2},
        {"hoge": [{"a": 9, "b": 10}], "bar": 8},
    ],
    "nantoka": {"x": "y"},
    "a b": 1,
    "x\"y": 2,
}


def ev(text: str, data: dict | None = None, **kw):
    f = compile_expr(parse_expression(text), Scope(("s",)))
    return f(Env({"s": Tuple(DOC if data is None else data, T1)}, **kw))


@pytest.mark.parametrize("path,want", [
    ("nantoka", {"x": "y"}), ("nantoka.x", "y"), ('nantoka["x"]', "y"), ("foo[0].bar", 5),
    ("foo[0].hoge[-1].a", 3), ('["foo"][0]["hoge"][-1]["a"]', 3), ("foo[1:3].bar", [2, 8]),
    ("foo[1:2].bar", [2]), ("foo..bar", [5, 2, 8]), ("foo..hoge[0].b", [2, 6, 10]),
    ("foo[1:].bar", [2, 8]), ("foo[0:3:2].bar", [5, 8]), ("foo[2:0:-1].bar", [8, 2]),
    ("foo[2:17].bar", [8]), ("foo[4:-4].bar", []), ("foo..b", [2, 4, 6, 8, 10]), ("nantoka..x", ["y"]),
    ("foo..x", []), ('["a b"]', 1), ('["x""y"]', 2), ("s:nantoka.x", "y"),
])
def test_json_paths(path, want):
    assert ev(path) == want


@pytest.mark.parametrize("path", ["nope", "nantoka.z", "foo[3]", "foo[-4]", "nantoka[0]", "foo.bar",
                                  "foo[0:2].nope"])
def test_missing_path_is_an_error(path):
    with pytest.raises(BQLEvaluationError):
        ev(path)


def test_is_missing_and_is_null():
    assert ev("b IS MISSING", {"a": 6}) is True
    assert ev("b IS NOT MISSING", {"a": 6}) is False
    assert ev("b IS MISSING", {"a": 6, "b": None}) is False
    assert ev("b IS NULL", {"a": 6, "b": None}) is True
    assert ev("foo[7] IS MISSING") is True
    with pytest.raises(BQLEvaluationError):
        ev("b IS NULL", {"a": 6})


def test_wildcards_ts_and_constructors():
    data = {"int": 1}
    assert ev('{"a": s:*}', data) == {"a": {"int": 1}}
    assert ev("[*, 2]", data) == [{"int": 1}, 2]
    assert ev("ts()", data) == T1
    assert ev("s:ts() = ts()", data) is True


def test_join_scope_needs_prefixes():
    scope = Scope(("l", "r"))
    f = compile_expr(parse_expression("l:a + r:c"), scope)
    env = Env({"l": Tuple({"a": 1}, T1), "r": Tuple({"c": 3}, T1)})
    assert f(env) == 4
    assert compile_expr(parse_expression("*"), scope)(env) == {"a": 1, "c": 3}
    with pytest.raises(BQLAnalysisError):
        compile_expr(parse_expression("a"), scope)
    with pytest.raises(BQLAnalysisError):
        compile_expr(parse_expression("x:a"), scope)


def test_case_expressions():
    text = 'CASE int WHEN 1 THEN int + 1 WHEN 3 THEN "b" ELSE "c" END'
    assert [ev(text, {"int": i}) for i in (1, 2, 3)] == [2, "c", "b"]
    assert ev("CASE WHEN x > 1 THEN 1 END", {"x": 0}) is None
    assert ev("CASE WHEN x > 1 THEN 1 WHEN x = 0 THEN 2 END", {"x": 0}) == 2
    # SensorBee builds a searched CASE as a CASE on `true` compared by data.Equal
    # (bql/execution/expressions.go, ConditionCaseAST): a non-bool condition does not match
    assert ev("CASE WHEN x THEN 1 END", {"x": 1}) is None


def test_runtime_errors_stay_runtime_errors():
    f = compile_expr(parse_expression("a + 1 / 0"), Scope(("s",)))  # folding must not raise
    with pytest.raises(BQLEvaluationError):
        f(Env({"s": Tuple({"a": 1}, T1)}))


def test_aggregate_outside_group_context_is_rejected():
    with pytest.raises(BQLAnalysisError):
        compile_expr(parse_expression("count(*)"), Scope(("s",)))
    call = parse_expression("sum(x)")
    f = compile_expr(parse_expression("sum(x) + 1"), Scope(("s",), aggregate_slot={call: 0}.get))
    assert f(Env({}, [41])) == 42


def test_now_uses_env_and_is_rejected_in_eval():
    assert ev("now()", {}, now=T1) == T1
    with pytest.raises(BQLError):
        evaluate_constant(parse_expression("now()"))
    assert isinstance(evaluate_constant(parse_expression("clock_timestamp()")), dt.datetime)


def test_eval_constant_rules():
    assert evaluate_constant(parse_expression("1 + 2")) == 3
    for text in ["a + 1", "count(1)", "ts()", "*", "nosuchfn(1)", "abs(1, 2)"]:
        with pytest.raises(BQLError):
            evaluate_constant(parse_expression(text))


def test_eval_on_map():
    on = parse_expression('{"a": 2, "b": {"c": 3}}')
    assert evaluate_constant(parse_expression("a + b.c"), on=on) == 5
    assert evaluate_constant(parse_expression("z IS MISSING"), on=on) is True
    with pytest.raises(BQLError):
        evaluate_constant(parse_expression("a"), on=parse_expression("[1]"))


def test_static_helpers():
    assert is_aggregate_call(parse_expression("count(*)"))
    assert not is_aggregate_call(parse_expression("abs(1)"))
    assert contains_aggregate(parse_expression("1 + max(x) * 2"))
    assert not contains_aggregate(parse_expression("abs(x)"))
    assert is_volatile(parse_expression("random() + 1"))
    assert is_volatile(parse_expression("now()"))
    assert not is_volatile(parse_expression("abs(x)"))
    assert is_constant(parse_expression("abs(-1) + 2"))
    assert not is_constant(parse_expression("abs(x)"))
    assert isinstance(parse_expression("count(*)"), FunctionCall)
