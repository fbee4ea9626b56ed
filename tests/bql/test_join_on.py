"""``JOIN ... ON`` / ``USING`` / ``CROSS JOIN`` against the spelling SensorBee runs: the same SELECT with
the relations listed in FROM and ``(ON) AND (WHERE)`` as its WHERE clause (bql/transform_join.py,
docs/sql-breadth.md). Random streams go through both spellings, through the default (incremental)
kernel and the reference kernel; outputs and dropped-tuple texts must be identical. Also: the rewrite's
AST, errors with line/column/caret, keywords that stay names elsewhere, and the analyzer's verdicts.
"""
from __future__ import annotations

import pytest
from analysis_util import analysis_verdict
from check_util import sbpy_check
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.errors import BQLSyntaxError
from sbpy.bql.parser import parse, parse_one
from sbpy.bql.runtime import ProcessorContext
from sbpy.bql.runtime.testing import run_query_detailed

rows = st.lists(st.fixed_dictionaries({"k": st.one_of(st.none(), st.integers(0, 2), st.just(1.0)),
                                       "v": st.integers(-1, 4), "j": st.integers(0, 1)}),
                min_size=0, max_size=8)
emitters = st.sampled_from(["RSTREAM", "ISTREAM", "DSTREAM"])
windows = st.sampled_from(["[RANGE 1 TUPLES]", "[RANGE 2 TUPLES]", "[RANGE 3 TUPLES]",
                           "[RANGE 3 MILLISECONDS]"])
# (ON condition, equivalent WHERE condition): equi-joins, non-equi conditions, an error (v = 0 → 1 / 0)
conditions = st.sampled_from([
    "l:k = r:k",
    "l:k = r:k AND l:j = r:j",
    "l:v < r:v",
    "l:k = r:k OR l:v = r:v",
    "l:k = r:k AND 4 / (r:v + 1) > 1",
    "l:k + 0 = r:k",
])
wheres = st.sampled_from(["", "l:v >= 0", "r:v % 2 = 0 OR l:j = 1", "l:v / r:v > 0"])
selects = st.sampled_from(["l:v AS lv, r:v AS rv, r:k AS k", "l:*, r:v AS rv", "count(*) AS n"])


def _both(query_join: str, query_plain: str, inputs: dict, order: list[str]):
    for kernel in (None, "reference"):
        context = ProcessorContext(kernel=kernel) if kernel else None
        a = run_query_detailed(query_join, inputs, order, context=context)
        b = run_query_detailed(query_plain, inputs, order, context=context)
        assert a.outputs == b.outputs
        assert [d.error for d in a.dropped] == [d.error for d in b.dropped]


@settings(max_examples=150, deadline=None)
@given(rows, rows, st.lists(st.sampled_from(["l", "r"]), max_size=16), emitters, windows, windows,
       conditions, wheres, selects)
def test_join_on_equals_the_from_list_with_where(left, right, order, emitter, wl, wr, on, where, items):
    tail = f" WHERE {where}" if where else ""
    joined = f"SELECT {emitter} {items} FROM l {wl} JOIN r {wr} ON {on}{tail}"
    both = f"({on}) AND ({where})" if where else on
    plain = f"SELECT {emitter} {items} FROM l {wl}, r {wr} WHERE {both}"
    _both(joined, plain, {"l": left, "r": right}, order)


@settings(max_examples=80, deadline=None)
@given(rows, rows, rows, st.lists(st.sampled_from(["a", "b", "c"]), max_size=20), emitters, wheres)
def test_a_chain_of_joins_and_using(a, b, c, order, emitter, where):
    where = where.replace("l:", "x:").replace("r:", "y:")
    tail = f" WHERE {where}" if where else ""
    joined = (f"SELECT {emitter} x:v AS xv, y:v AS yv, z:v AS zv FROM a [RANGE 2 TUPLES] AS x "
              f"INNER JOIN b [RANGE 2 TUPLES] AS y USING (k, j) JOIN c [RANGE 3 TUPLES] AS z ON z:v > y:v{tail}")
    both = "(x:k = y:k AND x:j = y:j) AND (z:v > y:v)" + (f" AND ({where})" if where else "")
    plain = (f"SELECT {emitter} x:v AS xv, y:v AS yv, z:v AS zv FROM a [RANGE 2 TUPLES] AS x, "
             f"b [RANGE 2 TUPLES] AS y, c [RANGE 3 TUPLES] AS z WHERE {both}")
    _both(joined, plain, {"a": a, "b": b, "c": c}, order)


def test_the_rewrite_is_the_from_list_with_where():
    joined = parse_one("SELECT ISTREAM l:v FROM l [RANGE 2 TUPLES] JOIN r [RANGE 1 TUPLES] AS q "
                       "ON l:k = q:k OR l:v = 1 WHERE q:v > 0")
    plain = parse_one("SELECT ISTREAM l:v FROM l [RANGE 2 TUPLES], r [RANGE 1 TUPLES] AS q "
                      "WHERE (l:k = q:k OR l:v = 1) AND q:v > 0")
    assert joined == plain
    cross = parse_one("SELECT RSTREAM * FROM l [RANGE 2 TUPLES] CROSS JOIN r [RANGE 1 TUPLES], s [RANGE 1 TUPLES]")
    assert cross == parse_one("SELECT RSTREAM * FROM l [RANGE 2 TUPLES], r [RANGE 1 TUPLES], s [RANGE 1 TUPLES]")
    using = parse_one("SELECT RSTREAM * FROM l [RANGE 2 TUPLES] JOIN r [RANGE 1 TUPLES] USING (k)")
    assert using == parse_one("SELECT RSTREAM * FROM l [RANGE 2 TUPLES], r [RANGE 1 TUPLES] WHERE l:k = r:k")


def test_join_reads_ctes_and_subqueries():
    stmt = parse_one("WITH t AS (SELECT RSTREAM k, v FROM s [RANGE 1 TUPLES]) "
                     "SELECT RSTREAM t:v, u:v FROM t [RANGE 2 TUPLES] JOIN "
                     "(SELECT ISTREAM k, v FROM s [RANGE 1 TUPLES]) [RANGE 1 TUPLES] AS u ON t:k = u:k")
    assert [type(i).__name__ for i in stmt.from_items] == ["SubqueryRef", "SubqueryRef"]
    inputs = {"s": [{"k": 1, "v": 1}, {"k": 1, "v": 2}, {"k": 2, "v": 3}]}
    out = run_query_detailed("SELECT RSTREAM t:v AS a, u:v AS b FROM (SELECT RSTREAM k, v FROM s [RANGE 1 TUPLES]) "
                             "[RANGE 2 TUPLES] AS t JOIN s [RANGE 1 TUPLES] AS u ON t:k = u:k", inputs)
    plain = run_query_detailed("SELECT RSTREAM t:v AS a, u:v AS b FROM (SELECT RSTREAM k, v FROM s [RANGE 1 TUPLES]) "
                               "[RANGE 2 TUPLES] AS t, s [RANGE 1 TUPLES] AS u WHERE t:k = u:k", inputs)
    assert out.outputs == plain.outputs and out.outputs


FULL = ("FULL OUTER JOIN is not supported: sbpy has inner, LEFT and RIGHT joins of windows; "
        "write a LEFT JOIN and a RIGHT JOIN as two SELECTs (UNION ALL)")
PAIR = ("a LEFT JOIN joins exactly two relations; join more in a CREATE STREAM or a subquery that reads "
        "the LEFT JOIN's output")
MIXED = ("a LEFT JOIN cannot be combined with other relations in FROM; join them in a SELECT that reads "
         "the LEFT JOIN's output")
ERRORS = [  # statement, line:column of the caret, reason
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES]\n  full outer join b [RANGE 1 TUPLES] ON a:k = b:k", "2:3", FULL),
    (("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] LEFT JOIN b [RANGE 1 TUPLES] ON a:k = b:k\n"
      "  JOIN c [RANGE 1 TUPLES] ON c:k = b:k"), "2:3", PAIR),
    (("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] RIGHT JOIN b [RANGE 1 TUPLES] ON a:k = b:k\n"
      "  INNER JOIN c [RANGE 1 TUPLES] ON c:k = b:k"), "2:9", PAIR.replace("LEFT", "RIGHT")),
    (("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] JOIN b [RANGE 1 TUPLES] ON a:k = b:k\n"
      "  RIGHT OUTER JOIN c [RANGE 1 TUPLES] ON c:k = b:k"), "2:3", PAIR.replace("LEFT", "RIGHT")),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] LEFT JOIN b [RANGE 1 TUPLES] ON a:k = b:k, c [RANGE 1 TUPLES]",
     "1:85", MIXED),
    ("SELECT RSTREAM * FROM c [RANGE 1 TUPLES], a [RANGE 2 TUPLES] LEFT JOIN b [RANGE 1 TUPLES] USING (k)",
     "1:23", MIXED),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] LEFT JOIN b ON a:k = b:k", "1:52",
     "'b' needs a RANGE window in a LEFT JOIN"),
    ("SELECT a:x FROM a [RANGE 1 TUPLES] LEFT JOIN b [RANGE 1 TUPLES] ON a:k = b:k EMIT ON UPDATE", "1:78",
     "a LEFT JOIN runs on RANGE windows with an emitter; EMIT belongs to Timeplus window queries"),
    ("SELECT a:x FROM tumble(a, 5 SECONDS) LEFT JOIN b [RANGE 1 TUPLES] ON a:k = b:k", "1:17",
     "a LEFT JOIN cannot read a WindowFunction (yet); read its output stream with a RANGE window"),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] JOIN b [RANGE 1 TUPLES] WHERE a:k = b:k", "1:42",
     "JOIN needs a condition: ON <condition> or USING (<field>, ...) (CROSS JOIN for the cross product)"),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES]\nINNER JOIN b [RANGE 1 TUPLES]", "2:7",
     "JOIN needs a condition: ON <condition> or USING (<field>, ...) (CROSS JOIN for the cross product)"),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] AS x\n  JOIN b [RANGE 1 TUPLES] ON a:k = b:k", "2:30",
     "ON refers to 'a', which is not joined here (joined: 'x', 'b')"),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] JOIN b [RANGE 1 TUPLES] ON b:k = c:k, c [RANGE 1 TUPLES]", "1:75",
     "ON refers to 'c', which is not joined here (joined: 'a', 'b')"),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] CROSS JOIN b [RANGE 1 TUPLES] ON a:k = b:k", "1:72",
     "CROSS JOIN takes no ON condition"),
    ("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] JOIN b [RANGE 1 TUPLES] USING (k, j, k)", "1:79",
     "USING names 'k' twice"),
]


@pytest.mark.parametrize(("text", "at", "reason"), ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_joins_are_syntax_errors_with_a_caret(text, at, reason):
    with pytest.raises(BQLSyntaxError) as info:
        parse(text)
    line, col = (int(x) for x in at.split(":"))
    lines = info.value.message.split("\n")
    assert lines[0] == f"statement has a syntax error near line {line}, symbol {col}:"
    assert lines[1] == text.split("\n")[line - 1]
    assert lines[2] == " " * (col - 1) + "^"
    assert lines[3] == reason
    assert (info.value.span.line, info.value.span.column) == (line, col)


def test_join_without_a_right_relation_is_a_plain_syntax_error():
    with pytest.raises(BQLSyntaxError) as info:
        parse("SELECT RSTREAM * FROM a [RANGE 2 TUPLES] JOIN ON a:k = 1")
    assert (info.value.span.line, info.value.span.column) == (1, 50)  # 'ON' read as a stream name, then 'a' is unexpected


ANALYZED = [  # statement, "ok" or "line:column: message" from the analyzer
    ("SELECT RSTREAM a:x FROM a [RANGE 2 TUPLES] JOIN b [RANGE 1 TUPLES] ON k = b:k",
     "1:71: 'k' needs a stream prefix (such as 'a:') when FROM has several streams"),
    ("SELECT RSTREAM x FROM s [RANGE 2 TUPLES] AS s1 JOIN s [RANGE 1 TUPLES] ON s1:k = s:k",
     "1:16: 'x' needs a stream prefix (such as 's1:') when FROM has several streams"),
    ("SELECT RSTREAM s1:x FROM s [RANGE 2 TUPLES] AS s1 JOIN s [RANGE 1 TUPLES] AS s2 ON s1:k = s2:k", "ok"),
    ("SELECT RSTREAM a:x FROM a [RANGE 2 TUPLES] JOIN a [RANGE 1 TUPLES] ON a:k = a:j",
     "1:49: stream 'a' appears more than once in FROM; give each occurrence a distinct alias with AS"),
]


@pytest.mark.parametrize(("text", "verdict"), ANALYZED, ids=[a[0] for a in ANALYZED])
def test_the_analyzer_checks_the_rewritten_select(text, verdict):
    assert analysis_verdict(text) == verdict


def test_join_words_stay_names_elsewhere():
    stmt = parse_one("SELECT RSTREAM left:join, inner:on FROM left [RANGE 1 TUPLES] JOIN inner [RANGE 1 TUPLES] "
                     "ON left:using = inner:cross")
    assert [i.name for i in stmt.from_items] == ["left", "inner"]
    plain = parse_one("SELECT RSTREAM join, on, using, cross, left, full FROM s [RANGE 1 TUPLES]")
    assert len(plain.projections) == 6


def _interval_pairs(events: list[tuple[str, dict]], bound: int) -> list[dict]:
    """Flink's inner interval join ``a.k = b.k AND b.ts BETWEEN a.ts - bound AND a.ts`` over input in
    time order: each pair once, when its later element arrives, partners in arrival order."""
    seen: dict[str, list[dict]] = {"a": [], "b": []}
    out = []
    for side, row in events:
        for other in seen["b" if side == "a" else "a"]:
            a, b = (row, other) if side == "a" else (other, row)
            if a["k"] == b["k"] and a["ts"] - bound <= b["ts"] <= a["ts"]:
                out.append({"aid": a["id"], "bid": b["id"]})
        seen[side].append(row)
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 1), st.integers(0, 2)), max_size=16),
       st.integers(1, 3))
def test_interval_join_recipe_equals_flinks_interval_join_on_ordered_input(steps, bound):
    """docs/sql-breadth.md: with time windows of the bound, ``b:ts() <= a:ts()`` in ON, ISTREAM and both
    sides' ids in the select list, each pair is emitted once, when its later tuple arrives."""
    events, ts = [], 0
    for i, (side, k, gap) in enumerate(steps):
        ts += gap  # non-decreasing timestamps (equal ones too)
        events.append((side, {"id": i, "k": k, "ts": ts}))
    inputs = {"a": [r for s, r in events if s == "a"], "b": [r for s, r in events if s == "b"]}
    query = (f"SELECT ISTREAM a:id AS aid, b:id AS bid FROM a [RANGE {bound} SECONDS] JOIN b [RANGE {bound} SECONDS] "
             "ON a:k = b:k AND b:ts() <= a:ts()")
    result = run_query_detailed(query, inputs, [s for s, _ in events], timestamp_field="ts")
    assert not result.dropped
    assert result.outputs == _interval_pairs(events, bound)


def test_sbpy_check_accepts_joins_and_reports_a_bad_one(tmp_path):
    rc, out = sbpy_check(tmp_path / "q.bql",
                         'CREATE SOURCE a TYPE file WITH path = "a.jsonl";\n'
                         'CREATE SOURCE b TYPE file WITH path = "b.jsonl";\n'
                         "CREATE STREAM i AS SELECT ISTREAM a:v FROM a [RANGE 2 TUPLES] JOIN b [RANGE 2 TUPLES] USING (k);\n"
                         "CREATE STREAM o AS SELECT RSTREAM a:v, b:v AS w FROM a [RANGE 2 TUPLES] "
                         "LEFT JOIN b [RANGE 1 SECONDS] ON a:k = b:k WHERE b:v IS NULL;\n")
    assert rc == 0, out
    rc, out = sbpy_check(tmp_path / "bad.bql",
                         'CREATE SOURCE a TYPE file WITH path = "a.jsonl";\n'
                         "SELECT RSTREAM a:v FROM a [RANGE 2 TUPLES] JOIN a [RANGE 1 TUPLES] AS c;")
    assert rc == 1 and "JOIN needs a condition" in out
