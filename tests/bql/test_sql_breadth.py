"""Golden rows for SQL beyond SensorBee (tests/fixtures/bql/sql_breadth.yaml): IN, LIKE, BETWEEN,
DISTINCT, ORDER BY / top-N — evaluation values and error texts, analyzer verdicts with positions,
stream runs through the in-process kernel (outputs and the texts of dropped steps), syntax errors with
line/column/caret, and parse → unparse → parse identity. Also: ``sbpy check`` accepts the syntax, the
incremental kernel and the generated fast stage code leave these statements to the reference kernel.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from check_util import sbpy_check
from conformance_compare import same, same_rows
from sbpy.bql.analyzer import analyze, prepare
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError, BQLEvaluationError, BQLSyntaxError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.parser import parse, parse_expression, parse_one
from sbpy.bql.runtime.testing import run_query_detailed
from sbpy.bql.values import from_json, to_json

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bql" / "sql_breadth.yaml"
ROWS = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))


def _eval(row: dict):
    on = parse_expression(row["input"]) if "input" in row else None
    return evaluate_constant(parse_expression(row["eval"]), on=on)


@pytest.mark.parametrize("row", ROWS["eval"], ids=[r["eval"] for r in ROWS["eval"]])
def test_eval_row(row):
    assert "origin" in row
    if "error" in row:
        with pytest.raises(BQLEvaluationError) as info:
            _eval(row)
        assert info.value.message == row["error"]
        return
    got = from_json(to_json(_eval(row)))
    assert same(got, row["value"], 0.0), (got, row["value"])


@pytest.mark.parametrize("row", ROWS["statement"], ids=[r["statement"] for r in ROWS["statement"]])
def test_statement_row(row):
    assert "origin" in row
    text = row["statement"]
    stmt = prepare(parse_one(text))
    if row["error"] == "ok":
        analyze(stmt, text)
        return
    with pytest.raises(BQLAnalysisError) as info:
        analyze(stmt, text)
    err = info.value
    assert f"{err.span.line}:{err.span.column}: {err.message}" == row["error"]


@pytest.mark.parametrize("row", ROWS["stream"], ids=[r["query"] for r in ROWS["stream"]])
def test_stream_row(row):
    assert "origin" in row
    result = run_query_detailed(row["query"], row["inputs"])
    assert same_rows(result.outputs, row["expected"], True, 0.0), result.outputs
    assert [d.error for d in result.dropped] == row.get("dropped", [])


@pytest.mark.parametrize("row", ROWS["parse_error"], ids=[r["statement"] for r in ROWS["parse_error"]])
def test_parse_error_row(row):
    text = row["statement"]
    with pytest.raises(BQLSyntaxError) as info:
        parse(text)
    err = info.value
    line, col = (int(x) for x in row["at"].split(":"))
    lines = err.message.split("\n")
    assert lines[0] == f"statement has a syntax error near line {line}, symbol {col}:"
    assert lines[1] == text.split("\n")[line - 1]
    assert lines[2] == " " * (col - 1) + "^"
    assert lines[3] == row["reason"]
    assert (err.span.line, err.span.column) == (line, col)


@pytest.mark.parametrize("text", ROWS["identity"])
def test_identity(text):
    stmt = parse_one(text)
    canonical = unparse(stmt)
    assert parse_one(canonical) == stmt, canonical
    assert unparse(parse_one(canonical)) == canonical


def test_new_words_stay_field_names_elsewhere():
    """IN, LIKE, BETWEEN, ESCAPE and ORDER are keywords only where the grammar expects them."""
    stmt = parse_one("SELECT RSTREAM in, like, between, escape, order FROM s [RANGE 1 TUPLES]")
    assert [unparse(p.expr) for p in stmt.projections] == ["in", "like", "between", "escape", "order"]
    assert parse_expression("in IN (like)") == parse_expression("(in) IN (like)")


def test_distinct_first_in_the_select_list():
    # a field called distinct (SensorBee has no DISTINCT: bql.peg reads it as a field), unless a select
    # item follows it
    stmt = parse_one("SELECT RSTREAM distinct FROM s [RANGE 1 TUPLES]")
    assert not stmt.distinct and stmt.projections[0].expr == parse_expression("distinct")
    stmt = parse_one("SELECT RSTREAM distinct, a FROM s [RANGE 1 TUPLES]")
    assert not stmt.distinct and len(stmt.projections) == 2
    stmt = parse_one("SELECT RSTREAM DISTINCT a FROM s [RANGE 1 TUPLES]")
    assert stmt.distinct and len(stmt.projections) == 1
    stmt = parse_one('SELECT RSTREAM ["distinct"], distinct FROM s [RANGE 1 TUPLES]')
    assert not stmt.distinct and len(stmt.projections) == 2


def test_sbpy_check_accepts_the_new_syntax(tmp_path):
    statements = [t for t in ROWS["identity"] if t.startswith(("SELECT", "WITH"))]
    assert any(t.startswith("WITH") for t in statements)
    rc, out = sbpy_check(tmp_path / "q.bql",
                         "".join(f'CREATE SOURCE {n} TYPE file WITH path = "in.jsonl";\n' for n in ("s", "s1", "s2"))
                         + "\n".join(f"CREATE STREAM q{i} AS {t};" for i, t in enumerate(statements)))
    assert rc == 0, out
    rc, out = sbpy_check(tmp_path / "bad.bql", 'CREATE SOURCE s TYPE file WITH path = "in.jsonl";\n'
                                               "SELECT RSTREAM a FROM s [RANGE 1 TUPLES] ORDER BY b;")
    assert rc == 1 and "ORDER BY refers to 'b', which is not an output column (columns: a)" in out


def test_stage_codegen_leaves_the_new_forms_to_the_kernel():
    """The generated stage code claims only comparisons, AND/OR/NOT and plain projections; the new
    predicates make ``generate`` give up, so the rows take the compiled closures."""
    from sbpy.bql.runtime.stage_codegen import generate

    for cond in ('a IN (1, 2)', 'a BETWEEN 1 AND 2', 's LIKE "x%"', 'a > 1 AND s NOT LIKE "x"'):
        assert generate(parse_expression(cond), [("a", parse_expression("a"))], "src") is None, cond
    assert generate(parse_expression("a > 1"), [("a", parse_expression("a"))], "src") is not None


def test_fast_stage_of_a_new_predicate_is_not_generated():
    from sbpy.bql.runtime import build_processor
    from sbpy.bql.runtime.testing import parse_select
    from sbpy.bql.runtime.stage_codegen import generate_for

    claimed = build_processor(parse_select("SELECT RSTREAM a FROM s [RANGE 1 TUPLES] WHERE a > 1"))
    assert claimed.fast and generate_for(claimed) is not None
    for cond in ("a IN (1)", "a BETWEEN 1 AND 2", 'a LIKE "x"'):
        proc = build_processor(parse_select(f"SELECT RSTREAM a FROM s [RANGE 1 TUPLES] WHERE {cond}"))
        assert proc.fast and generate_for(proc) is None, cond


def test_distinct_and_order_by_run_on_the_reference_kernel():
    from sbpy.bql.runtime import build_processor
    from sbpy.bql.runtime.incremental import IncrementalSelectProcessor
    from sbpy.bql.runtime.kernel import SelectProcessor
    from sbpy.bql.runtime.testing import parse_select

    for text in ("SELECT RSTREAM DISTINCT a FROM s [RANGE 1 TUPLES]",
                 "SELECT ISTREAM a FROM s [RANGE 9 TUPLES] ORDER BY a LIMIT 2"):
        proc = build_processor(parse_select(text))
        assert type(proc) is SelectProcessor and not proc.fast, text
    plain = build_processor(parse_select("SELECT ISTREAM a FROM s [RANGE 9 TUPLES] WHERE a IN (1)"))
    assert isinstance(plain, IncrementalSelectProcessor)


def test_a_with_statement_is_documented_under_select():
    with pytest.raises(BQLSyntaxError) as info:
        parse("WITH a AS SELECT RSTREAM x FROM s [RANGE 1 TUPLES]")
    assert info.value.message.split("\n")[-1] == "consider to look up the documentation for SELECT"
