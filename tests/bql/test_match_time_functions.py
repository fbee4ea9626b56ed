"""MATCH_ROWTIME() / MATCH_PROCTIME() (Flink), count(A.*) and Flink's WITHIN INTERVAL 'n' unit syntax:
golden cases, the analyzer's rules, and a property of count(A.*) against the match's classifiers."""
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from match_time_util import T0, feed_steps, outputs, processor
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.parser import parse_one

ENGINES = ["matcher", "automaton"]
ABC = "PATTERN (A B+ C) DEFINE A AS v = 1, B AS v = 2, C AS v = 3"


def rows_of(vs, key="t"):
    return [{key: i, "v": v} for i, v in enumerate(vs, start=1)]


@pytest.mark.parametrize("engine", ENGINES)
def test_match_rowtime_is_the_time_attribute_of_the_last_row(engine):
    p = processor(f"ORDER BY t MEASURES FIRST(A.t) AS s, MATCH_ROWTIME() AS rt {ABC}", engine=engine)
    assert outputs(feed_steps(p, rows_of([1, 2, 2, 3, 1, 2, 3]))) == [{"s": 1, "rt": 4}, {"s": 5, "rt": 7}]


@pytest.mark.parametrize("engine", ENGINES)
def test_match_rowtime_of_a_timestamp_key_is_that_timestamp(engine):
    p = processor(f"ORDER BY ts() MEASURES MATCH_ROWTIME() AS rt {ABC}", engine=engine)
    steps = feed_steps(p, rows_of([1, 2, 3]), ts_of=lambda r: T0 + dt.timedelta(seconds=10 * r["t"]))
    assert outputs(steps) == [{"rt": T0 + dt.timedelta(seconds=30)}]


@pytest.mark.parametrize("engine", ENGINES)
def test_match_rowtime_in_all_rows_per_match_is_the_match_end_for_every_row(engine):
    p = processor(f"ORDER BY t MEASURES MATCH_ROWTIME() AS rt, LAST(t) AS cur ALL ROWS PER MATCH {ABC}",
                  engine=engine)
    got = outputs(feed_steps(p, rows_of([1, 2, 2, 3])))
    assert [(r["cur"], r["rt"]) for r in got] == [(1, 4), (2, 4), (3, 4), (4, 4)]


@pytest.mark.parametrize("engine", ENGINES)
def test_match_rowtime_of_an_empty_match_is_its_row(engine):
    p = processor("ORDER BY t MEASURES MATCH_ROWTIME() AS rt ALL ROWS PER MATCH SHOW EMPTY MATCHES "
                  "PATTERN (A*) DEFINE A AS v = 1", engine=engine)
    got = outputs(feed_steps(p, rows_of([2, 1])))
    assert [(r["t"], r["rt"]) for r in got] == [(1, 1), (2, 2)]


def test_match_proctime_is_a_utc_timestamp_that_never_goes_back():
    p = processor("ORDER BY t MEASURES MATCH_PROCTIME() AS pt PATTERN (A) DEFINE A AS v = 1")
    got = [r["pt"] for r in outputs(feed_steps(p, rows_of([1] * 50)))]
    assert len(got) == 50
    assert all(type(x) is dt.datetime and x.utcoffset() == dt.timedelta(0) for x in got)
    assert got == sorted(got)


def test_match_proctime_holds_when_the_wall_clock_steps_back():
    later = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)
    p = processor("ORDER BY t MEASURES MATCH_PROCTIME() AS pt PATTERN (A) DEFINE A AS v = 1")
    p.spec.ctx.proc_clock.last = later  # as if an earlier output was stamped in 2030
    got = outputs(feed_steps(p, rows_of([1])))
    assert got == [{"pt": later}]


@pytest.mark.parametrize("call", ["MATCH_ROWTIME()", "MATCH_PROCTIME()"])
def test_match_time_functions_are_refused_in_define(call):
    with pytest.raises(BQLAnalysisError, match="only be used in MEASURES"):
        processor(f"ORDER BY t MEASURES count(*) AS n PATTERN (A B) DEFINE B AS B.t > {call}")


@pytest.mark.parametrize("engine", ENGINES)
def test_count_of_a_variables_rows(engine):
    p = processor(f"ORDER BY t MEASURES count(B.*) AS nb, count(A.*) AS na, count(*) AS n {ABC}", engine=engine)
    assert outputs(feed_steps(p, rows_of([1, 2, 2, 2, 3, 1, 2, 3]))) == [
        {"nb": 3, "na": 1, "n": 5}, {"nb": 1, "na": 1, "n": 3}]


@pytest.mark.parametrize("engine", ENGINES)
def test_count_of_a_variables_rows_is_running_in_all_rows_per_match(engine):
    p = processor(f"ORDER BY t MEASURES count(B.*) AS nb, FINAL count(B.*) AS total ALL ROWS PER MATCH {ABC}",
                  engine=engine)
    got = outputs(feed_steps(p, rows_of([1, 2, 2, 3])))
    assert [(r["nb"], r["total"]) for r in got] == [(0, 2), (1, 2), (2, 2), (2, 2)]


@pytest.mark.parametrize("engine", ENGINES)
def test_count_of_a_variables_rows_in_define_bounds_the_loop(engine):
    p = processor("ORDER BY t MEASURES count(B.*) AS nb PATTERN (A B+ C) "
                  "DEFINE A AS v = 1, B AS v = 2 AND count(B.*) <= 2, C AS v = 3", engine=engine)
    assert outputs(feed_steps(p, rows_of([1, 2, 2, 2, 3, 1, 2, 2, 3]))) == [{"nb": 2}]
    assert p.engine_description().startswith("backtracking matcher")  # it reads other rows' labels


def test_count_of_a_subset_and_the_unparsed_form():
    stmt = parse_one("SELECT RSTREAM * FROM s MATCH_RECOGNIZE (ORDER BY t MEASURES count(U.*) AS n "
                     "PATTERN (A B+ C) SUBSET U = (A, C) DEFINE A AS v = 1, B AS v = 2, C AS v = 3)")
    text = unparse(stmt)
    assert "count(u:*)" in text and parse_one(text) == stmt
    p = processor("ORDER BY t MEASURES count(U.*) AS n PATTERN (A B+ C) SUBSET U = (A, C) "
                  "DEFINE A AS v = 1, B AS v = 2, C AS v = 3")
    assert outputs(feed_steps(p, rows_of([1, 2, 2, 3]))) == [{"n": 2}]


@pytest.mark.parametrize("body,message", [
    ("ORDER BY t MEASURES count(X.*) AS n PATTERN (A B) DEFINE A AS v = 1", "'X' is not a pattern variable"),
    ("ORDER BY t MEASURES B.* AS n PATTERN (A B) DEFINE A AS v = 1", "only be the argument of count"),
    ("ORDER BY t MEASURES sum(B.*) AS n PATTERN (A B) DEFINE A AS v = 1", "'*'"),
])
def test_variable_wildcard_rules(body, message):
    with pytest.raises(BQLAnalysisError, match=message):
        processor(body)


def test_a_dotted_field_selector_keeps_its_parse():
    stmt = parse_one("SELECT RSTREAM a.b * 2 AS x FROM s")
    assert unparse(stmt) == "SELECT RSTREAM a.b * 2 AS x FROM s"


LABELS = st.lists(st.sampled_from([1, 2, 3, 4]), max_size=30)


@settings(max_examples=150, deadline=None)
@given(LABELS, st.sampled_from(["ONE ROW PER MATCH", "ALL ROWS PER MATCH"]), st.sampled_from(ENGINES))
def test_count_of_a_variable_equals_its_labels_among_the_classifiers(vs, rpm, engine):
    """count(X.*) is the number of rows labelled X among the (running) match's classifiers, read
    through array_agg(CLASSIFIER())."""
    p = processor("ORDER BY t MEASURES count(A.*) AS na, count(B.*) AS nb, array_agg(CLASSIFIER()) AS cls "
                  f"{rpm} PATTERN ((A | B)+ C) DEFINE A AS v = 1, B AS v < 4, C AS v = 4", engine=engine)
    got = outputs(feed_steps(p, rows_of(vs)))
    for r in got:
        assert r["na"] == r["cls"].count("A") and r["nb"] == r["cls"].count("B")


# ---------------------------------------------------------------- WITHIN INTERVAL 'n' unit


@pytest.mark.parametrize("flink,bql", [
    ("INTERVAL '10' SECOND", "10 SECONDS"), ("INTERVAL '1' HOUR", "3600 SECONDS"),
    ("INTERVAL '2' MINUTE", "120 SECONDS"), ("INTERVAL '1' DAY", "86400 SECONDS"),
    ("INTERVAL '250' MILLISECOND", "250 MILLISECONDS"), ("INTERVAL '1.5' SECOND", "1.5 SECONDS"),
])
def test_within_interval_is_the_bql_interval(flink, bql):
    def ast(within):
        return parse_one(f"SELECT RSTREAM * FROM s MATCH_RECOGNIZE (ORDER BY t MEASURES count(*) AS n "
                         f"PATTERN (A B) WITHIN {within} DEFINE A AS v = 1)")
    assert ast(flink) == ast(bql)
    assert parse_one(unparse(ast(flink))) == ast(bql)


def test_flink_within_example_with_the_interval_syntax():
    """Flink's WITHIN example as written there (WITHIN INTERVAL '1' HOUR): only the 12:00-13:00 drop."""
    t10 = 1301652000  # 01-Apr-11 10:00:00 UTC, rows every 20 minutes
    prices = [20, 17, 18, 11, 14, 9, 15, 14, 24, 1, 19]
    rows = [{"symbol": "ACME", "rowtime": t10 + 1200 * i, "price": p, "tax": 1} for i, p in enumerate(prices)]
    p = processor("PARTITION BY symbol ORDER BY rowtime MEASURES C.rowtime AS dropTime, A.price - C.price AS dropDiff "
                  "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B* C) WITHIN INTERVAL '1' HOUR "
                  "DEFINE B AS B.price > A.price - 10, C AS C.price < A.price - 10", stream="Ticker")
    assert outputs(feed_steps(p, rows, stream="Ticker")) == [
        {"symbol": "ACME", "dropTime": t10 + 3 * 3600, "dropDiff": 14}]
    assert p.engine_description() == "backtracking matcher: WITHIN bounds each attempt by time"


# ---------------------------------------------------------------- the parsed node


def test_match_time_calls_parse_to_their_node_and_unparse():
    from sbpy.bql.ast import MatchTime

    stmt = parse_one("SELECT RSTREAM * FROM s MATCH_RECOGNIZE (ORDER BY t MEASURES MATCH_ROWTIME() AS r, "
                     "match_proctime() AS p PATTERN (A) DEFINE A AS v = 1)")
    measures = stmt.from_items[0].measures
    assert [m.expr for m in measures] == [MatchTime("row"), MatchTime("proc")]
    assert "MATCH_ROWTIME() AS r, MATCH_PROCTIME() AS p" in unparse(stmt)
    assert parse_one(unparse(stmt)) == stmt


def test_match_time_inside_expressions_is_not_folded_as_a_constant():
    p = processor("ORDER BY t MEASURES MATCH_ROWTIME() + 0 AS x, MATCH_PROCTIME()::string AS y "
                  "PATTERN (A) DEFINE A AS v = 1")
    got = outputs(feed_steps(p, rows_of([1, 1])))
    assert [r["x"] for r in got] == [1, 2]
    assert all(type(r["y"]) is str for r in got)


def test_match_time_cannot_order_or_partition():
    with pytest.raises(BQLAnalysisError, match="cannot be used in PARTITION BY or ORDER BY"):
        processor("ORDER BY MATCH_ROWTIME() MEASURES count(*) AS n PATTERN (A) DEFINE A AS v = 1")


def test_sbpy_check_accepts_the_time_forms(tmp_path):
    import argparse
    import io

    from sbpy.server.cli import check

    script = tmp_path / "q.bql"
    script.write_text(
        'CREATE SOURCE Ticker TYPE file WITH path = "in.jsonl";\n'
        "CREATE STREAM drops AS SELECT RSTREAM * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol "
        "ORDER BY rowtime, price DESC MEASURES MATCH_ROWTIME() AS end_t, MATCH_PROCTIME() AS pt, "
        "count(B.*) AS n_b PATTERN (A B* C) WITHIN INTERVAL '1' HOUR "
        "DEFINE B AS B.price > A.price - 10, C AS C.price < A.price - 10 "
        'SETTINGS time_order_recover_delay = 30, watermark = "global");\n')
    out = io.StringIO()
    rc = check.main(argparse.Namespace(file=str(script)), stdin=io.StringIO(""), stdout=out)
    assert rc == 0, out.getvalue()
