"""Hostile BQL text gives SensorBee's syntax error (E0006), never a crash: deep nesting (issue 12)
and integer literals too long for Python's int-from-string limit."""
import io

import pytest

from sbpy.bql.errors import BQLSyntaxError
from sbpy.bql.parser import MAX_NESTING, parse, parse_expression
from sbpy.server.cli.check import main as check_main

DEEP = {
    "parentheses": "EVAL " + "(" * 600 + "1" + ")" * 600 + ";",
    "arrays": "EVAL " + "[" * 600 + "]" * 600 + ";",
    "function calls": "EVAL " + "abs(" * 600 + "1" + ")" * 600 + ";",
    "negations": "EVAL " + "- " * 600 + "1;",
    "a long + chain": "EVAL 1" + " + 1" * 3000 + ";",
    "select": "SELECT RSTREAM " + "abs(" * 600 + "a" + ")" * 600 + " FROM s [RANGE 1 TUPLES];",
}
HUGE_INT = "EVAL " + "7" * 5000 + ";"


@pytest.mark.parametrize("text", [t for k, t in DEEP.items() if k != "parentheses"], ids=[
    k for k in DEEP if k != "parentheses"])
def test_deep_nesting_is_a_syntax_error(text):
    with pytest.raises(BQLSyntaxError) as info:
        parse(text)
    err = info.value
    assert err.code == "E0006"
    assert f"nested too deeply (more than {MAX_NESTING} levels)" in err.message
    assert err.message.startswith("statement has a syntax error near line 1, symbol ")


def test_redundant_parentheses_still_parse():
    # parentheses leave no trace in the AST, so 600 of them are harmless
    assert parse(DEEP["parentheses"])[0].expr.value == 1


def test_nesting_below_the_limit_parses():
    depth = MAX_NESTING // 2
    assert parse_expression("[" * depth + "]" * depth) is not None
    assert parse("EVAL 1" + " + 1" * depth + ";")


def test_huge_integer_literal_is_a_syntax_error():
    for text, col in ((HUGE_INT, 6), ("SELECT RSTREAM * FROM s [RANGE " + "9" * 5000 + " TUPLES];", 32)):
        with pytest.raises(BQLSyntaxError) as info:
            parse(text)
        lines = info.value.message.split("\n")
        assert lines[0] == f"statement has a syntax error near line 1, symbol {col}:"
        assert "is out of the int64 range" in lines[3]
        assert len(lines[3]) < 120  # the literal is abbreviated, not echoed 5000 digits long


def test_int64_bounds_unchanged():
    assert parse_expression("9223372036854775807").value == 2 ** 63 - 1
    assert parse_expression("000000000000000000000000042").value == 42
    with pytest.raises(BQLSyntaxError, match="out of the int64 range"):
        parse_expression("9223372036854775808")


@pytest.mark.parametrize("text", [DEEP["arrays"], DEEP["a long + chain"], HUGE_INT],
                         ids=["arrays", "chain", "huge int"])
def test_sbpy_check_reports_them(text):
    out = io.StringIO()
    code = check_main(_Args("-"), stdin=io.StringIO(text), stdout=out)
    assert code != 0
    assert "error" in out.getvalue()
    assert "Traceback" not in out.getvalue()


class _Args:
    def __init__(self, file: str):
        self.file = file


def test_casting_a_huge_digit_string_is_an_evaluation_error():
    from sbpy.bql.errors import BQLEvaluationError
    from sbpy.bql.eval import evaluate_constant

    for text in ('CAST("' + "1" * 5000 + '" AS int)', '"-' + "9" * 5000 + '"::int'):
        with pytest.raises(BQLEvaluationError, match=r"\.\.\.\(50\d\d characters\)' is out of the range of 'int'"):
            evaluate_constant(parse_expression(text))
    assert evaluate_constant(parse_expression('"-9223372036854775808"::int')) == -2 ** 63
