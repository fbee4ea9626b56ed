"""EVAL conformance: every case of bql_eval/eval.yaml through the parser and ``evaluate_constant``,
compared as the conformance runner does (int vs float matter, timestamps as RFC3339 instants)."""
from __future__ import annotations


import pytest
import yaml

from sbpy.bql.errors import BQLError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.values import from_json, to_json
from conformance_compare import CASES as CASES_DIR
from conformance_compare import same

CASES = CASES_DIR / "bql_eval" / "eval.yaml"

if not CASES.exists():  # pragma: no cover
    pytest.skip("conformance cases not available", allow_module_level=True)

_cases = yaml.safe_load(CASES.read_text())


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
