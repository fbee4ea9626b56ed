"""Golden rows for SensorBee's evaluation and statement rules (tests/fixtures/bql/sensorbee_rules.yaml).

Each row names the SensorBee source that decides it (its Go code and test tables, or the reference
document where the two disagree). Eval rows run through the parser and ``evaluate_constant`` (with
``ON`` when the row reads fields) and are compared as the conformance runner compares: after a JSON
round trip, int and float differ, bool is not int. Statement rows go through the parser and the
analyzer; stream rows through the in-process kernel, counting dropped tuples.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conformance_compare import same, same_rows

from sbpy.bql.analyzer import analyze, prepare
from sbpy.bql.errors import BQLError, BQLEvaluationError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.parser import parse_expression, parse_one
from sbpy.bql.runtime.testing import run_query_detailed
from sbpy.bql.values import from_json, to_json

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bql" / "sensorbee_rules.yaml"
ROWS = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))


def _eval(row: dict):
    on = parse_expression(row["input"]) if "input" in row else None
    return evaluate_constant(parse_expression(row["eval"]), on=on)


@pytest.mark.parametrize("row", ROWS["eval"], ids=[r["eval"] for r in ROWS["eval"]])
def test_eval_row(row):
    assert "origin" in row
    if row.get("error"):
        with pytest.raises(BQLEvaluationError):  # a run-time error, not a parse or analysis one
            _eval(row)
        return
    got = from_json(to_json(_eval(row)))
    assert same(got, row["value"], 0.0), (got, row["value"])


def _analyze(text: str) -> None:
    analyze(prepare(parse_one(text)), text)


@pytest.mark.parametrize("row", ROWS["statement"], ids=[r["statement"] for r in ROWS["statement"]])
def test_statement_row(row):
    assert "origin" in row
    if row["error"]:
        with pytest.raises(BQLError):
            _analyze(row["statement"])
    else:
        _analyze(row["statement"])


@pytest.mark.parametrize("row", ROWS["stream"], ids=[r["query"] for r in ROWS["stream"]])
def test_stream_row(row):
    assert "origin" in row
    result = run_query_detailed(row["query"], row["inputs"])
    assert same_rows(result.outputs, row["expected"], True, 0.0), result.outputs
    assert len(result.dropped) == row.get("dropped", 0), result.dropped


def test_selector_round_trips_through_unparse():
    from sbpy.bql.ast.unparse_expr import expr

    for text in ("f(a).b[0]", 'f(a)["x y"]', "f(a)[1:2]", "f(a)..k", "count(a).x"):
        e = parse_expression(text)
        assert parse_expression(expr(e)) == e, (text, expr(e))
