"""AST shape and span tests for representative BQL statements."""
from sbpy.bql.ast import (
    BinaryOp, CreateSource, Eval, FieldRef, FunctionCall, KeyStep, Literal, Select, StreamRef,
    Wildcard,
)
from sbpy.bql.parser import parse, parse_expression, parse_one, parse_script


def test_select_shape():
    s = parse_one("SELECT RSTREAM a, count(*) AS c FROM src [RANGE 3 TUPLES] WHERE a > -1")
    assert isinstance(s, Select)
    assert s.emitter == "rstream"
    assert s.projections[1].expr == FunctionCall("count", (Wildcard(),))
    assert s.from_items[0].name == "src" and s.from_items[0].window.value == 3
    assert s.where == BinaryOp(">", FieldRef((KeyStep("a"),)), Literal(-1))


def test_create_source_and_eval():
    stmts = parse('CREATE PAUSED SOURCE S TYPE File WITH path = "a""b"; EVAL -(-17)')
    assert stmts[0] == CreateSource("s", "file", stmts[0].params, True)
    assert stmts[0].params[0].value == Literal('a"b')
    assert isinstance(stmts[1], Eval)


def test_script_texts_and_offsets():
    text = "INSERT INTO k FROM s;\n  DROP SOURCE s ;"
    out = parse_script(text)
    assert [p.text for p in out] == ["INSERT INTO k FROM s", "DROP SOURCE s"]
    assert out[1].offset == text.index("DROP")


def test_expression_spans():
    e = parse_expression("1 + foo.bar")
    assert e.span.start == 0 and e.span.end == 11
    assert e.right.span.start == 4 and e.right.span.column == 5


def test_keyword_like_stream_names():
    s = parse_one("SELECT RSTREAM count FROM count [RANGE 1 TUPLES], input [RANGE 1 TUPLES]")
    assert [f.name for f in s.from_items] == ["count", "input"]
    assert isinstance(s.from_items[1], StreamRef)


# ------------------------------------------------------------------ conformance corpus

import glob  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402

from sbpy.bql.errors import BQLSyntaxError  # noqa: E402

CASES = "/work/shared/conformance/cases"
# expect_error statements that are errors of the language itself (not of analysis)
PURE_SYNTAX_ERRORS = (
    "[RANGE 3 UPLES]", "[RANGE 5 MINUTES]", "SELECT XSTREAM", "/* two */", "EVAL 'abc'", "1e10",
    "CREATE SINK 1snk", "LOAD STATE my_uds", "UNION SELECT", "foo[2:1]", "foo[3:2]",
    "list[1:3]..foo", "foo..bar..hoge", "..foo AS", "AS x[1:2]", "A{5,1}", "SELECT RSTREAM 2 AS x",
)


def _conformance():
    yaml = pytest.importorskip("yaml")
    if not os.path.isdir(CASES):
        return []
    out = []
    for path in sorted(glob.glob(f"{CASES}/**/*.yaml", recursive=True)):
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        for case in yaml.load(open(path), Loader=loader) or []:
            out.append((os.path.basename(path), case))
    return out


CONFORMANCE = _conformance()


@pytest.mark.skipif(not CONFORMANCE, reason="no conformance cases")
def test_conformance_texts_parse():
    checked = 0
    for _, case in CONFORMANCE:
        if "query" in case:
            parse_one(case["query"])
        elif "eval" in case and not case.get("expect_error"):
            parse_expression(case["eval"])
        elif "statement" in case and not case.get("expect_error"):
            parse(case["statement"])
        else:
            continue
        checked += 1
    assert checked > 300


@pytest.mark.skipif(not CONFORMANCE, reason="no conformance cases")
def test_conformance_syntax_errors_rejected():
    bad = [c["statement"] for _, c in CONFORMANCE
           if c.get("expect_error") and "statement" in c
           and any(m in c["statement"] for m in PURE_SYNTAX_ERRORS)]
    assert len(bad) >= 15
    for text in bad:
        with pytest.raises(BQLSyntaxError):
            parse(text)
