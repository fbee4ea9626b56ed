"""Syntax errors: the table in tests/fixtures/bql/parse_errors.txt, SensorBee's message layout, spans."""
from pathlib import Path

import pytest

from sbpy.bql.errors import BQLSyntaxError
from sbpy.bql.parser import parse, parse_expression, parse_one

TABLE = Path(__file__).parents[1] / "fixtures" / "bql" / "parse_errors.txt"


def _rows():
    for raw in TABLE.read_text().splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        stmt, where, reason = (part.strip() for part in raw.split("\t==> "))
        line, col = (int(x) for x in where.split(":"))
        yield stmt.replace("\\n", "\n"), line, col, reason


ROWS = list(_rows())


@pytest.mark.parametrize("stmt,line,col,reason", ROWS, ids=[r[0][:40] for r in ROWS])
def test_error_table(stmt, line, col, reason):
    with pytest.raises(BQLSyntaxError) as info:
        parse(stmt)
    err = info.value
    lines = err.message.split("\n")
    assert lines[0] == f"statement has a syntax error near line {line}, symbol {col}:"
    assert lines[3] == reason
    assert (err.span.line, err.span.column) == (line, col)
    assert err.code == "E0006"


def test_message_layout():
    with pytest.raises(BQLSyntaxError) as info:
        parse("SELECT RSTREAM * FROM src [RANGE 3 UPLES]")
    assert info.value.message.split("\n") == [
        "statement has a syntax error near line 1, symbol 36:",
        "SELECT RSTREAM * FROM src [RANGE 3 UPLES]",
        "                                   ^",
        "unexpected identifier 'UPLES', expected 'MILLISECONDS', 'SECONDS' or 'TUPLES'",
        "consider to look up the documentation for SELECT",
    ]
    span = info.value.span
    assert (span.start, span.end) == (35, 40)


@pytest.mark.parametrize("text,kind", [
    ("CREATE PAUSED SOURCE s TYPE", "CREATE SOURCE"),
    ("CREATE STATE s", "CREATE STATE"),
    ("UPDATE SINK s", "UPDATE SINK"),
    ("DROP STREAM", "DROP STREAM"),
    ("SAVE STATE", "SAVE STATE"),
    ("REWIND SOURCE", "REWIND SOURCE"),
    ("EVAL 1; -- c\n LOAD STATE x", "LOAD STATE"),
])
def test_hint_names_the_statement(text, kind):
    with pytest.raises(BQLSyntaxError) as info:
        parse(text)
    assert info.value.message.endswith(f"consider to look up the documentation for {kind}")


def test_parse_one_needs_exactly_one_statement():
    with pytest.raises(BQLSyntaxError, match="expected exactly one statement"):
        parse_one("EVAL 1; EVAL 2")
    with pytest.raises(BQLSyntaxError, match="holds no statement"):
        parse_one(" ; ")


def test_expression_errors():
    with pytest.raises(BQLSyntaxError):
        parse_expression("1 +")
    with pytest.raises(BQLSyntaxError):
        parse_expression("EVAL 1")


def test_keyword_read_as_a_name_only_when_the_text_does_not_parse_otherwise():
    from sbpy.bql.ast import Case, FieldRef, KeyStep, Literal

    case = parse_expression("CASE when WHEN 2 THEN 3 ELSE 6 END")
    assert isinstance(case, Case) and case.operand == FieldRef((KeyStep("when"),))
    assert case.whens[0].condition == Literal(2) and case.else_ == Literal(6)
    searched = parse_expression("CASE WHEN true THEN 3 END")
    assert searched.operand is None and searched.whens[0].condition == Literal(True)


def test_failed_renaming_reports_the_first_error():
    with pytest.raises(BQLSyntaxError) as info:
        parse("SELECT RSTREAM * FROM a [RANGE 1 TUPLES] UNION SELECT RSTREAM * FROM b [RANGE 1 TUPLES]")
    assert info.value.message.split("\n")[3] == "unexpected 'SELECT', expected 'ALL'"
