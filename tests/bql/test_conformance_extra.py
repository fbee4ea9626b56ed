"""Extra conformance cases found by comparing sbpy with SensorBee's documentation and code.

Every ``*.yaml`` of ``tests/fixtures/conformance_extra`` is a list of cases in the format of the shared
conformance runner (``shared/conformance/FORMAT.md``), run in-process the way the other conformance
tests do: an ``eval`` case through the parser and ``evaluate_constant``, a ``statement`` case through
``sbpy check -`` (``expect_error: true``: exit status 1; false: exit status 0), a stream case through
the in-process kernels (``run_query``, the reference and the incremental one). Values compare as the
runner compares them (int and float differ, timestamps compare as instants).
"""
from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
import yaml
from conformance_compare import same, same_rows

from sbpy.bql.errors import BQLError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.parser import parse_expression
from sbpy.bql.values import from_json, to_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "conformance_extra"


def _cases():
    out = []
    for path in sorted(FIXTURES.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text()) or []:
            out.append(pytest.param(case, id=f"{path.stem}::{case['name']}"))
    return out


CASES = _cases()


def _check(statement: str) -> tuple[int, str]:
    """``sbpy check -`` on one statement: its exit status and output."""
    from sbpy.server.cli import check

    out = io.StringIO()
    args = argparse.Namespace(file="-", resolve=False, config=None, topology=None, uri=None)
    return check.main(args, stdin=io.StringIO(statement), stdout=out), out.getvalue()


def _eval(case: dict) -> None:
    if case.get("expect_error"):
        with pytest.raises(BQLError):
            evaluate_constant(parse_expression(case["eval"]))
        return
    got = from_json(to_json(evaluate_constant(parse_expression(case["eval"]))))
    assert same(got, case["expected_value"], case.get("float_tol", 0.0)), (got, case["expected_value"])


def _statement(case: dict) -> None:
    status, output = _check(case["statement"])
    assert status == (1 if case["expect_error"] else 0), output


def _stream(case: dict) -> None:
    """Both SELECT kernels: the sequential reference and the one ``build_processor`` picks (incremental
    where it qualifies) must each give the expected rows."""
    from sbpy.bql.runtime import ProcessorContext
    from sbpy.bql.runtime.testing import run_query

    want = case["expected"]
    for kernel in ("reference", "auto"):
        got = run_query(case["query"], case["inputs"], case.get("interleave"), case.get("timestamp_field"),
                        ProcessorContext(kernel=kernel))
        ordered, tol = case.get("ordered", True), float(case.get("float_tol", 0.0))
        assert same_rows(got, want, ordered, tol), (kernel, got, want)


@pytest.mark.parametrize("case", CASES)
def test_case(case):
    assert case.get("origin"), "every case cites where its expected result comes from"
    if "eval" in case:
        _eval(case)
    elif "statement" in case:
        _statement(case)
    else:
        _stream(case)


def test_names_are_unique():
    names = [p.values[0]["name"] for p in CASES]
    assert len(names) == len(set(names))
