"""``table(stream)`` in process (docs/timeplus.md, "table()"): the bounded table query against the
reference SELECT kernel reading the same rows through ``t [RANGE n TUPLES]`` (its relation after the
last row) and against SQL computed by hand; the stream-table join against the kernel's join with the
table's rows arriving first into a window that keeps them all; Timeplus' bare-stream join tail against
its ``RANGE 1 TUPLES`` + RSTREAM form and by hand; snapshot/restore; goldens; the analyzer's errors."""
from __future__ import annotations

import dataclasses
import datetime as _dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analysis_util import analysis_verdict
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.history import TableQueryProcessor, bind_tables
from sbpy.bql.runtime.kernel import SelectProcessor
from sbpy.bql.runtime.processor import ProcessorContext, Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select

T0 = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC)
REFERENCE = ProcessorContext(kernel="reference")


def tuples(rows: list[dict], name: str, start: int = 0) -> list[Tuple]:
    """``rows`` as tuples of ``name``, one millisecond apart from ``start``."""
    return [Tuple(dict(r), T0 + _dt.timedelta(milliseconds=start + i), start + i + 1, name)
            for i, r in enumerate(rows)]


def table_query(query: str, tables: dict[str, list[dict]]) -> tuple[list, list[str]]:
    """The outputs (JSON-ready) and dropped errors of a table query over ``tables``."""
    proc = build_processor(bind_tables(parse_select(query), lambda n: tuples(tables[n], n)))
    assert isinstance(proc, TableQueryProcessor)
    result = proc.run()
    assert result.done and proc.run().outputs == []  # it runs once
    return [json_ready(t.data) for t in result.outputs], [d.error for d in result.dropped]


def kernel_last_relation(query: str, rows: list[dict]) -> tuple[list, bool]:
    """The reference kernel's RSTREAM output at its last step, reading ``rows`` through
    ``t [RANGE len TUPLES]`` (``query`` spells the input ``table(t)``), and whether any step dropped."""
    text = query.replace("table(t)", f"t [RANGE {max(len(rows), 1)} TUPLES]")
    proc = SelectProcessor(parse_select(text.replace("SELECT ", "SELECT RSTREAM ", 1)), REFERENCE)
    last, dropped = [], False
    for tup in tuples(rows, "t"):
        step = proc.process(tup)
        dropped = dropped or bool(step.dropped)
        last = [json_ready(t.data) for t in step.outputs]
    return last, dropped


values = st.one_of(st.integers(-5, 5), st.floats(-5, 5, allow_nan=False), st.none(), st.sampled_from(["a", "b"]))
rows_st = st.lists(st.fixed_dictionaries({"k": st.integers(0, 3), "v": values}), max_size=25)

QUERIES = [
    "SELECT * FROM table(t)",
    "SELECT k, v FROM table(t) WHERE k > 1",
    "SELECT k, count(*) AS n, sum(v) AS s FROM table(t) WHERE v IS NOT NULL GROUP BY k",
    "SELECT count(*) AS n, max(v) AS m FROM table(t)",
    "SELECT k, count(*) AS n FROM table(t) GROUP BY k HAVING count(*) > 1",
    "SELECT DISTINCT k FROM table(t)",
    "SELECT k, v FROM table(t) WHERE v IS NOT NULL ORDER BY v DESC, k LIMIT 3",
    "SELECT v * 2 AS w FROM table(t)",
]


@settings(max_examples=60, deadline=None)
@given(rows=rows_st, q=st.sampled_from(QUERIES))
def test_table_query_is_the_kernels_relation_after_the_last_row(rows, q):
    got, dropped = table_query(q, {"t": rows})
    expected, kernel_dropped = kernel_last_relation(q, rows)
    if not dropped and not kernel_dropped and rows:
        assert got == expected
    assert got == table_query(q, {"t": rows})[0]  # deterministic


@settings(max_examples=60, deadline=None)
@given(rows=rows_st, offset=st.integers(0, 6), limit=st.integers(0, 6))
def test_table_query_by_hand(rows, offset, limit):
    """WHERE, projection errors (left out and reported), ORDER BY, OFFSET and LIMIT against Python."""
    q = f"SELECT k, v + 1 AS w FROM table(t) WHERE k != 2 ORDER BY k DESC LIMIT {limit} OFFSET {offset}"
    got, dropped = table_query(q, {"t": rows})
    kept = [r for r in rows if r["k"] != 2]
    ok = [r for r in kept if r["v"] is None or not isinstance(r["v"], str)]
    out = [{"k": r["k"], "w": None if r["v"] is None else r["v"] + 1} for r in ok]
    out.sort(key=lambda r: -r["k"])  # stable: equal keys keep the history's order
    assert got == json_ready(out[offset:offset + limit])
    assert len(dropped) == len(kept) - len(ok)
    q2 = "SELECT k, v FROM table(t) LIMIT 2 OFFSET 1"  # without ORDER BY: history order
    assert table_query(q2, {"t": rows})[0] == json_ready(rows[1:3])


@settings(max_examples=40, deadline=None)
@given(a=st.lists(st.integers(0, 4), max_size=8), b=st.lists(st.integers(0, 4), max_size=8))
def test_tables_join_as_nested_loops(a, b):
    q = "SELECT RSTREAM x:v AS x, y:v AS y FROM table(t) AS x JOIN table(u) AS y ON x:v < y:v"
    got, _ = table_query(q, {"t": [{"v": v} for v in a], "u": [{"v": v} for v in b]})
    assert got == [{"x": x, "y": y} for x in a for y in b if x < y]


def test_a_failing_aggregate_fails_the_result():
    got, dropped = table_query("SELECT sum(v) AS s FROM table(t)", {"t": [{"v": 1}, {"v": "x"}]})
    assert got == [] and len(dropped) == 1


def test_goldens():
    rows = [{"k": i % 3, "v": i} for i in range(10)]
    assert table_query("SELECT count() FROM table(t)", {"t": rows})[0] == [{"count": 10}]
    assert table_query("SELECT k, count() AS n FROM table(t) GROUP BY k HAVING n > 3", {"t": rows})[0] == [
        {"k": 0, "n": 4}]
    assert table_query("SELECT * FROM table(t) ORDER BY v LIMIT 3 OFFSET 1", {"t": rows})[0] == [
        {"k": 1, "v": 1}, {"k": 2, "v": 2}, {"k": 0, "v": 3}]
    assert table_query("SELECT count() AS n FROM table(t)", {"t": []})[0] == [{"n": 0}]


# ---------------------------------------------------------------- stream-table join

JOINS = [
    "SELECT ISTREAM s:id AS id, t:v AS v FROM s [RANGE 2 TUPLES] JOIN table(t) ON s:k = t:k",
    "SELECT RSTREAM s:id AS id, t:v AS v FROM s [RANGE 1 TUPLES] JOIN table(t) ON s:k = t:k WHERE t:v > 1",
    "SELECT RSTREAM s:id AS id, t:v AS v FROM s [RANGE 3 MILLISECONDS] JOIN table(t) ON s:k = t:k",
    "SELECT ISTREAM s:k AS k, count(*) AS n FROM s [RANGE 3 TUPLES] JOIN table(t) ON s:k = t:k GROUP BY s:k",
    "SELECT DSTREAM s:id AS id, t:v AS v FROM s [RANGE 2 TUPLES] LEFT JOIN table(t) ON s:k = t:k",
    "SELECT ISTREAM s:id AS id, t:v AS v FROM s [RANGE 2 TUPLES] LEFT JOIN table(t) ON s:k = t:k AND t:v > 2",
]
keyed = st.lists(st.fixed_dictionaries({"k": st.integers(0, 3), "v": st.integers(0, 5)}), max_size=8)
stream_st = st.lists(st.integers(0, 4), max_size=12).map(lambda ks: [{"id": i, "k": k} for i, k in enumerate(ks)])


def join_outputs(query: str, table: list[dict], stream: list[dict]) -> list:
    proc = build_processor(bind_tables(parse_select(query), lambda n: tuples(table, n)))
    out = []
    for tup in tuples(stream, "s", start=len(table)):
        out += [json_ready(t.data) for t in proc.process(tup).outputs]
    return out


def window_reference(query: str, table: list[dict], stream: list[dict]) -> list:
    """The same join reading ``t`` as a stream whose rows all arrive first into a window that keeps
    them (outputs of those first steps are skipped: the stream side is still empty)."""
    text = query.replace("table(t)", f"t [RANGE {max(len(table), 1)} TUPLES]")
    proc = SelectProcessor(parse_select(text), REFERENCE) if "LEFT" not in text else build_processor(
        parse_select(text), REFERENCE)
    for tup in tuples(table, "t"):
        assert proc.process(tup).outputs == []
    out = []
    for tup in tuples(stream, "s", start=len(table)):
        out += [json_ready(t.data) for t in proc.process(tup).outputs]
    return out


@settings(max_examples=60, deadline=None)
@given(table=keyed, stream=stream_st, q=st.sampled_from(JOINS))
def test_stream_table_join_is_a_window_that_holds_the_table(table, stream, q):
    assert join_outputs(q, table, stream) == window_reference(q, table, stream)


def join_run(query: str, table: list[dict], stream: list[dict], context: ProcessorContext | None = None):
    """Outputs and dropped errors of ``query`` over ``stream`` with ``table(t)``, step by step."""
    proc = build_processor(bind_tables(parse_select(query), lambda n: tuples(table, n)), context)
    steps = []
    for tup in tuples(stream, "s", start=len(table)):
        step = proc.process(tup)
        steps.append(([json_ready(t.data) for t in step.outputs], [d.error for d in step.dropped]))
    return steps


odd_keys = st.one_of(st.integers(0, 3), st.sampled_from([1.0, 2.0, 2.5, float("nan"), "1", True]), st.none())


def _maybe_key(k):
    return {} if k == "missing" else {"k": k}


@settings(max_examples=80, deadline=None)
@given(table=st.lists(st.tuples(st.one_of(odd_keys, st.just("missing")), st.integers(0, 5)), max_size=10),
       stream=st.lists(st.one_of(odd_keys, st.just("missing")), max_size=10),
       q=st.sampled_from([
           "SELECT ISTREAM s:id AS id, t:v AS v FROM s [RANGE 2 TUPLES] JOIN table(t) ON s:k = t:k",
           "SELECT RSTREAM s:id AS id, t:v AS v FROM s [RANGE 1 TUPLES], table(t) WHERE t:k = s:k AND "
           "t:v / (s:id % 3) >= 0",
           "SELECT RSTREAM count(*) AS n FROM s [RANGE 3 TUPLES] JOIN table(t) ON s:k = t:k OR t:v = 1",
       ]))
def test_the_table_index_is_exact(table, stream, q):
    """The hash index on the table side (``runtime.table_index``) against the reference kernel, which
    enumerates every table row: NULL, NaN, 2 vs 2.0, "1" vs 1 vs true, missing fields (errors), errors
    after the equality — the same rows, in the same order, and the same dropped steps."""
    table_rows = [{**_maybe_key(k), "v": v} for k, v in table]
    stream_rows = [{**_maybe_key(k), "id": i} for i, k in enumerate(stream)]
    assert join_run(q, table_rows, stream_rows) == join_run(q, table_rows, stream_rows, REFERENCE)


@settings(max_examples=40, deadline=None)
@given(table=keyed, stream=stream_st)
def test_the_bare_stream_join_tail_by_hand(table, stream):
    """Timeplus' ``FROM s JOIN table(t) ON ...``: each arriving tuple with its matches, table order."""
    tail = "SELECT s:id AS id, t:v AS v FROM s JOIN table(t) ON s:k = t:k"
    spelled = "SELECT RSTREAM s:id AS id, t:v AS v FROM s [RANGE 1 TUPLES] JOIN table(t) ON s:k = t:k"
    expected = [{"id": s["id"], "v": t["v"]} for s in stream for t in table if s["k"] == t["k"]]
    assert join_outputs(tail, table, stream) == join_outputs(spelled, table, stream) == expected


@settings(max_examples=40, deadline=None)
@given(table=keyed, stream=stream_st)
def test_the_bare_stream_left_join_tail_by_hand(table, stream):
    """Timeplus' enrichment ``FROM s LEFT JOIN table(t) ON ...``: matches, or one NULL-padded row."""
    tail = "SELECT s:id AS id, t:v AS v FROM s LEFT JOIN table(t) ON s:k = t:k"
    expected = []
    for s in stream:
        matches = [{"id": s["id"], "v": t["v"]} for t in table if s["k"] == t["k"]]
        expected += matches or [{"id": s["id"], "v": None}]
    assert join_outputs(tail, table, stream) == expected


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=keyed, stream=stream_st, q=st.sampled_from(JOINS), cut=st.data())
def test_a_restored_join_goes_on_with_its_own_table(table, stream, q, cut):
    """A processor restored from a snapshot continues with the table rows the snapshot holds, even
    when it was bound to a different history (a restarted query keeps what it read at its start)."""
    k = cut.draw(st.integers(0, len(stream)))
    first = build_processor(bind_tables(parse_select(q), lambda n: tuples(table, n)))
    head = []
    for tup in tuples(stream[:k], "s", start=len(table)):
        head += [json_ready(t.data) for t in first.process(tup).outputs]
    second = build_processor(bind_tables(parse_select(q), lambda n: tuples([{"k": 0, "v": 99}], n)))
    second.restore(first.snapshot())
    rest = []
    for tup in tuples(stream[k:], "s", start=len(table) + k):
        rest += [json_ready(t.data) for t in second.process(tup).outputs]
    assert head + rest == join_outputs(q, table, stream)


def test_an_unbound_table_reads_as_empty():
    proc = build_processor(parse_select("SELECT count() AS n FROM table(t)"))
    assert [t.data for t in proc.run().outputs] == [{"n": 0}]
    q = parse_select("SELECT RSTREAM s:k AS k FROM s [RANGE 1 TUPLES] JOIN table(t) ON s:k = t:k")
    assert build_processor(q).process(Tuple({"k": 1}, T0, 1, "s")).outputs == []
    item = q.from_items[1]
    assert dataclasses.replace(item, snapshot=None).snapshot is None


# ---------------------------------------------------------------- analyzer

@pytest.mark.parametrize(("text", "verdict"), [
    ("SELECT count() FROM table(s)", "ok"),
    ("SELECT RSTREAM * FROM table(s) ORDER BY a LIMIT 3 OFFSET 1", "ok"),
    ("SELECT a:x FROM s AS a JOIN table(t) AS b ON a:k = b:k", "ok"),
    ("SELECT ISTREAM a:x FROM s [RANGE 5 SECONDS] AS a JOIN table(t) AS b ON a:k = b:k", "ok"),
    ("SELECT ISTREAM x FROM table(s)",
     "1:1: a query over table() computes its result once: ISTREAM cannot be used (use RSTREAM or no emitter)"),
    ("SELECT x FROM table(s) EMIT ON UPDATE", "1:15: table() cannot be read by a query with an EMIT clause"),
    ("SELECT count() FROM s AS a JOIN table(t) AS b ON a:k = b:k",
     "1:21: stream 's' joined with table() needs a RANGE window to aggregate"),
    ("SELECT count(*) FROM tumble(s, 5s), table(t) GROUP BY window_start",
     "1:37: table() can only be joined with streams that have a RANGE window"),
    ("SELECT RSTREAM x FROM table(s) UNION ALL SELECT RSTREAM x FROM table(t)",
     "1:23: table() cannot be read in a subquery, a CTE or UNION ALL (yet)"),
    ("WITH h AS (SELECT RSTREAM x FROM table(s)) SELECT RSTREAM x FROM h [RANGE 1 TUPLES]",
     "1:34: table() cannot be read in a subquery, a CTE or UNION ALL (yet)"),
    ("SELECT RSTREAM a:x FROM table(t) AS b LEFT JOIN s [RANGE 1 TUPLES] AS a ON a:k = b:k",
     "1:25: table() cannot be the preserved side of a LEFT JOIN (its rows never arrive)"),
])
def test_analyzer_verdicts(text, verdict):
    assert analysis_verdict(text) == verdict


@pytest.mark.parametrize(("text", "message"), [
    ("SELECT RSTREAM * FROM table(s, 1)", "'table' takes one argument, a stream name: table(stream)"),
    ('SELECT RSTREAM * FROM table("s")', "'table' takes one argument, a stream name: table(stream)"),
    ("SELECT RSTREAM * FROM table(s) [RANGE 1 TUPLES]",
     "table() is a bounded relation and cannot have a RANGE window"),
])
def test_syntax_errors(text, message):
    from sbpy.bql.errors import BQLSyntaxError
    from sbpy.bql.parser import parse_one

    with pytest.raises(BQLSyntaxError) as err:
        parse_one(text)
    assert message in str(err.value)


def test_unparse_round_trips():
    from sbpy.bql.ast.unparse import unparse
    from sbpy.bql.parser import parse_one

    for text in ("SELECT RSTREAM count(*) FROM table(s) AS h",
                 "SELECT RSTREAM a:x FROM s [RANGE 1 TUPLES] AS a, table(t) AS b WHERE a:k = b:k"):
        assert unparse(parse_one(text)) == text


def test_sbpy_check_accepts_the_seed_examples_and_finds_unknown_tables(tmp_path):
    from check_util import sbpy_check

    script = ('CREATE SOURCE stream TYPE file WITH path = "x.jsonl", history = 1000;\n'
              "SELECT count() FROM table(stream);\n"
              "SELECT * FROM table(stream) ORDER BY a LIMIT 3 OFFSET 1;\n")
    assert sbpy_check(tmp_path / "ok.bql", script) == (0, "")
    rc, out = sbpy_check(tmp_path / "bad.bql", script + "SELECT count() FROM table(nothere);\n")
    assert rc != 0 and "bad.bql:4:27: stream 'nothere' was not found" in out
