"""EVAL conformance: every case of bql_eval/eval.yaml through the parser and ``evaluate_constant``,
compared as the conformance runner does (int vs float matter, timestamps as RFC3339 instants)."""
from __future__ import annotations

import datetime as _dt
import math
import pathlib

import pytest
import yaml

from sbpy.bql.errors import BQLError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.values import from_json, to_json

CASES = pathlib.Path("/work/shared/conformance/cases/bql_eval/eval.yaml")

if not CASES.exists():  # pragma: no cover
    pytest.skip("conformance cases not available", allow_module_level=True)

_cases = yaml.safe_load(CASES.read_text())


def _as_time(s: str) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None


def same(a, b, tol: float) -> bool:
    """The runner's strict comparison (sbcheck.py ``same``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= tol
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return True
        ta, tb = _as_time(a), _as_time(b)
        return ta is not None and ta == tb
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    return a is None and b is None


def _run(text: str):
    from sbpy.bql.parser import parse_expression

    return evaluate_constant(parse_expression(text))


@pytest.mark.parametrize("case", _cases, ids=[c["name"] for c in _cases])
def test_eval_case(case):
    if case.get("expect_error"):
        with pytest.raises(BQLError):
            _run(case["eval"])
        return
    got = from_json(to_json(_run(case["eval"])))  # what the server would answer
    assert same(got, case["expected_value"], case.get("float_tol", 0.0)), (got, case["expected_value"])
