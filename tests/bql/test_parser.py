"""AST shape and span tests for representative BQL statements."""
from sbpy.bql.ast import (
    AfterMatchSkip, AliasPath, BinaryOp, Case, Cast, Classifier, CreateSource, CreateStreamAsSelect,
    EmitClause, Eval, FieldRef, FunctionCall, IndexStep, Interval, IsMissing, IsNull, KeyStep,
    Literal, LoadState, MapLit, MatchNumber, MatchRecognize, Navigation, PatternAlt, PatternAnchor,
    PatternConcat, PatternExclusion, PatternPermute, PatternQuantified, PatternVar, RangeWindow,
    RecursiveStep, RunningFinal, Select, SelectUnion, SliceStep, SortKey, StreamRef, SubsetDef,
    TimestampRef, UdsfCall, UnaryOp, Wildcard, WindowFunction,
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



def f(*keys, stream=None):
    return FieldRef(tuple(KeyStep(k) for k in keys), stream)


def test_empty_scripts():
    assert parse("") == [] and parse(" ;; -- only a comment\n;") == []


def test_literals_and_folding():
    assert parse_expression("-36") == Literal(-36)
    assert parse_expression("-2.5") == Literal(-2.5)
    assert parse_expression("-(-17)") == UnaryOp("-", Literal(-17))
    assert parse_expression("-a") == UnaryOp("-", f("a"))
    assert parse_expression("-3::string") == UnaryOp("-", Cast(Literal(3), "string"))
    assert parse_expression("+4") == Literal(4)
    assert parse_expression("9223372036854775807") == Literal(2**63 - 1)
    assert parse_expression('"Dianne""s horse"') == Literal('Dianne"s horse')
    assert parse_expression("tRuE") == Literal(True)
    assert parse_expression("NuLL") == Literal(None)
    assert type(parse_expression("2.0").value) is float


def test_precedence():
    assert parse_expression("1 + 2 * 3") == BinaryOp("+", Literal(1), BinaryOp("*", Literal(2), Literal(3)))
    assert parse_expression("a OR b AND NOT c = d") == BinaryOp(
        "or", f("a"), BinaryOp("and", f("b"), UnaryOp("not", BinaryOp("=", f("c"), f("d")))))
    assert parse_expression("a || b IS NULL") == BinaryOp("||", f("a"), IsNull(f("b")))
    assert parse_expression("a + b IS NOT MISSING") == IsMissing(BinaryOp("+", f("a"), f("b")), True)
    assert parse_expression("a <> b") == BinaryOp("!=", f("a"), f("b"))
    assert parse_expression("1 - 2 - 3") == BinaryOp("-", BinaryOp("-", Literal(1), Literal(2)), Literal(3))


def test_json_paths():
    e = parse_expression('s:a.b["c d"][-1]..e')
    assert e.stream == "s"
    assert e.path == (KeyStep("a"), KeyStep("b"), KeyStep("c d", True), IndexStep(-1),
                      RecursiveStep("e"))
    assert parse_expression("a[1:3].b").path[1:] == (SliceStep(1, 3), KeyStep("b"))
    assert parse_expression("a[0:5:2]").path[1] == SliceStep(0, 5, 2)
    assert parse_expression('a..["b c"]').path[1] == RecursiveStep("b c")
    assert parse_expression("a[3:1:-1]").path[1] == SliceStep(3, 1, -1)
    assert parse_expression('["x"]') == FieldRef((KeyStep("x", True),))
    assert parse_expression("FooBar").path == (KeyStep("FooBar"),)


def test_calls_constructors_case():
    assert parse_expression("ts()") == TimestampRef()
    assert parse_expression("S:ts()") == TimestampRef("s")
    assert parse_expression("s:*") == Wildcard("s")
    assert parse_expression("Array_Agg(a ORDER BY b DESC, c)") == FunctionCall(
        "array_agg", (f("a"),), (SortKey(f("b"), True), SortKey(f("c"))))
    assert parse_expression('["foo",]').items == (Literal("foo"),)
    assert parse_expression('{"a": 1, "b": [2]}') == MapLit((("a", Literal(1)), ("b", parse_expression("[2]"))))
    assert parse_expression("CAST(a AS TIMESTAMP)") == Cast(f("a"), "timestamp")
    c = parse_expression("CASE x WHEN 1 THEN 2 ELSE 3 END")
    assert isinstance(c, Case) and c.operand == f("x") and c.else_ == Literal(3)
    assert parse_expression("CASE WHEN a THEN 1 END").operand is None


def test_ddl_forms():
    s = parse_one("LOAD STATE m TYPE t TAG v1 SET a = 1 OR CREATE IF NOT SAVED WITH b = 2")
    assert isinstance(s, LoadState) and s.tag == "v1" and s.create_if_not_saved
    assert [p.name for p in s.set_params] == ["a"] and [p.name for p in s.create_params] == ["b"]
    s = parse_one("CREATE STREAM S2 AS SELECT RSTREAM a FROM x [RANGE 1 TUPLES] "
                  "UNION ALL SELECT RSTREAM a FROM y [RANGE 1 TUPLES]")
    assert isinstance(s, CreateStreamAsSelect) and s.name == "s2"
    assert isinstance(s.select, SelectUnion) and len(s.select.selects) == 2


def test_from_items():
    s = parse_one('SELECT RSTREAM a AS x.y[3], b AS * FROM src [RANGE 10 TUPLES, BUFFER SIZE 5, '
                  'DROP NEWEST IF FULL] AS S1, udsf("x", 2) [RANGE 1.5 SECONDS] AS u')
    assert s.projections[0].alias == AliasPath((KeyStep("x"), KeyStep("y"), IndexStep(3)))
    assert s.projections[1].alias == AliasPath((), True)
    assert s.from_items[0] == StreamRef("src", RangeWindow(10, "tuples", 5, "drop_newest"), "s1")
    assert s.from_items[1] == UdsfCall("udsf", (Literal("x"), Literal(2)),
                                       RangeWindow(1.5, "seconds"), "u")


def test_timeplus():
    s = parse_one("SELECT window_start FROM hop(src, ts, 1 SECONDS, 500 MILLISECONDS) "
                  "GROUP BY window_start LIMIT 3 EMIT AFTER WINDOW CLOSE WITH DELAY 2 SECONDS")
    assert s.emitter is None and s.limit == 3
    assert s.from_items[0] == WindowFunction("hop", "src", f("ts"),
                                             (Interval(1, "seconds"), Interval(500, "milliseconds")))
    assert s.emit == EmitClause("after_watermark", Interval(2, "seconds"), spelled_window_close=True)
    s = parse_one("SELECT RSTREAM count(*) FROM session(src, 2 SECONDS) EMIT PERIODIC 1 SECONDS REPEAT")
    assert s.from_items[0].time_expr is None
    assert s.emit == EmitClause("periodic", period=Interval(1, "seconds"), repeat=True)


MR = ("SELECT RSTREAM * FROM t [RANGE 5 TUPLES] MATCH_RECOGNIZE (PARTITION BY k ORDER BY id "
      "MEASURES FINAL LAST(a.v, 1) AS lv, CLASSIFIER(b) AS c, MATCH_NUMBER() AS n "
      "ALL ROWS PER MATCH WITH UNMATCHED ROWS AFTER MATCH SKIP TO LAST b "
      "PATTERN (^ a b+? | PERMUTE(a, b) {- c -} $) WITHIN 3 SECONDS SUBSET u = (a, b) "
      "DEFINE b AS PREV(v) < v) AS m")


def test_match_recognize():
    m = parse_one(MR).from_items[0]
    assert isinstance(m, MatchRecognize) and m.alias == "m"
    assert m.input == StreamRef("t", RangeWindow(5, "tuples"))
    assert m.measures[0].expr == RunningFinal("final", Navigation("last", f("a", "v"), 1))
    assert m.measures[1].expr == Classifier("B")
    assert m.measures[2].expr == MatchNumber()
    assert (m.rows_per_match, m.empty_matches) == ("all", "with_unmatched")
    assert m.after_match == AfterMatchSkip("to_last", "B")
    assert m.pattern == PatternAlt((
        PatternConcat((PatternAnchor("start"), PatternVar("A"),
                       PatternQuantified(PatternVar("B"), 1, None, True))),
        PatternConcat((PatternPermute((PatternVar("A"), PatternVar("B"))),
                       PatternExclusion(PatternVar("C")), PatternAnchor("end"))),
    ))
    assert m.within == Interval(3, "seconds")
    assert m.subsets == (SubsetDef("U", ("A", "B")),)
    assert m.defines[0].condition == BinaryOp("<", Navigation("prev", f("v")), f("v"))


def test_match_recognize_defaults_and_quantifiers():
    m = parse_one("SELECT RSTREAM * FROM t MATCH_RECOGNIZE (ORDER BY id "
                  "PATTERN (A?? B{2} C{2,} D{,3} E{1,4}?) DEFINE A AS true)").from_items[0]
    assert (m.rows_per_match, m.empty_matches, m.after_match) == ("one", None, AfterMatchSkip())
    assert [(q.min_count, q.max_count, q.reluctant) for q in m.pattern.items] == [
        (0, 1, True), (2, 2, False), (2, None, False), (0, 3, False), (1, 4, True)]
    # outside MATCH_RECOGNIZE, PREV is an ordinary call
    assert parse_expression("prev(v)") == FunctionCall("prev", (f("v"),))


def test_spans_point_into_the_script():
    text = "EVAL 1;\nSELECT RSTREAM a.b FROM src [RANGE 1 TUPLES] AS s"
    sel = parse(text)[1]
    assert (sel.span.line, sel.span.column) == (2, 1)
    ref = sel.projections[0].expr
    assert text[ref.span.start:ref.span.end] == "a.b"
    src = sel.from_items[0]
    assert text[src.span.start:src.span.end] == "src [RANGE 1 TUPLES] AS s"
    assert text[src.window.span.start:src.window.span.end] == "[RANGE 1 TUPLES]"
    m = parse_one(MR).from_items[0]
    for node in m.walk():
        assert node.span is not None, node


# ------------------------------------------------------------------ conformance corpus

import glob  # noqa: E402
import os  # noqa: E402

import pytest  # noqa: E402

from sbpy.bql.errors import BQLSyntaxError  # noqa: E402

from conformance_compare import CASES as _CASES_DIR  # noqa: E402

CASES = str(_CASES_DIR)
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
