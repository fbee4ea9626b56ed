"""parse → unparse → parse identity over tests/fixtures/bql/identity.bql, and unparse fixed points."""
from pathlib import Path

import pytest

from sbpy.bql.ast import BinaryOp, Cast, FieldRef, KeyStep, Literal, UnaryOp
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.parser import parse_expression, parse_one

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bql" / "identity.bql"
LINES = [(i + 1, line.strip()) for i, line in enumerate(FIXTURE.read_text().splitlines())
         if line.strip() and not line.lstrip().startswith("--")]


@pytest.mark.parametrize("lineno,text", LINES, ids=[str(n) for n, _ in LINES])
def test_identity(lineno, text):
    stmt = parse_one(text)
    canonical = unparse(stmt)
    assert parse_one(canonical) == stmt, canonical
    assert unparse(parse_one(canonical)) == canonical


def test_fixture_is_large():
    assert len(LINES) > 150


@pytest.mark.parametrize("text,expected", [
    ("select rstream a from src [range 1 tuples] where a is not null",
     "SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE a IS NOT NULL"),
    ("EVAL (1 + 2) * 3", "EVAL (1 + 2) * 3"),
    ("EVAL ((a))", "EVAL a"),
    ('EVAL "a""b"', 'EVAL "a""b"'),
    ("EVAL a <> b", "EVAL a != b"),
    ("EVAL - -3", "EVAL - -3"),
    ("EVAL -(-3)", "EVAL - -3"),
    ("EVAL cast(a as INT)", "EVAL a::int"),
    ('EVAL ["x",]', 'EVAL ["x",]'),
    ("SELECT RSTREAM * FROM t MATCH_RECOGNIZE (ORDER BY id ONE ROW PER MATCH "
     "AFTER MATCH SKIP PAST LAST ROW PATTERN ((a b) c) DEFINE a AS true)",
     "SELECT RSTREAM * FROM t MATCH_RECOGNIZE (ORDER BY id PATTERN (A B C) DEFINE A AS TRUE)"),
])
def test_canonical_text(text, expected):
    assert unparse(parse_one(text)) == expected


def test_parenthesises_by_precedence():
    a, b, c = (FieldRef((KeyStep(n),)) for n in "abc")
    assert unparse(BinaryOp("*", BinaryOp("+", a, b), c)) == "(a + b) * c"
    assert unparse(BinaryOp("-", a, BinaryOp("-", b, c))) == "a - (b - c)"
    assert unparse(Cast(Literal(-3), "int")) == "(-3)::int"
    assert unparse(UnaryOp("-", Literal(-3))) == "- -3"
    assert unparse(BinaryOp("=", BinaryOp("<", a, b), c)) == "(a < b) = c"


def test_float_text_has_no_exponent():
    assert unparse(Literal(1e20)) == "100000000000000000000.0"
    assert parse_expression(unparse(Literal(1.5e-7))) == Literal(1.5e-7)


def test_unknown_node_fails_loudly():
    with pytest.raises(TypeError, match="cannot unparse 'int'"):
        unparse(3)
