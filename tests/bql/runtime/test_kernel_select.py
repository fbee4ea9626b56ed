"""The SELECT kernel step by step: emitters on the document's table, joins, grouping, errors, caching,
snapshot/restore, UNION ALL, UDSFs and dispatch."""
import datetime as dt
import sys
import types


from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select, run_query, run_query_detailed

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
PRICES = [{"id": 1, "price": 3.5}, {"id": 2, "price": 4.5}, {"id": 3, "price": 10.5},
          {"id": 4, "price": 8.5}, {"id": 5, "price": 6.5}]


def per_step(query, rows, name="src", seconds=None):
    proc = build_processor(parse_select(query))
    out = []
    for i, row in enumerate(rows):
        ts = T0 + dt.timedelta(seconds=seconds[i] if seconds else i)
        res = proc.process(Tuple(dict(row), ts, i + 1, name))
        out.append([t.data for t in res.outputs])
    return out


def test_document_emitter_table():
    q = "SELECT {} id, price FROM src [RANGE 3 TUPLES] WHERE price < 8"
    p1, p2, p5 = PRICES[0], PRICES[1], PRICES[4]
    assert per_step(q.format("RSTREAM"), PRICES) == [[p1], [p1, p2], [p1, p2], [p2], [p5]]
    assert per_step(q.format("ISTREAM"), PRICES) == [[p1], [p2], [], [], [p5]]
    assert per_step(q.format("DSTREAM"), PRICES) == [[], [], [], [p1], [p2]]


def test_istream_constant_multiplicity():
    out = per_step("SELECT ISTREAM 1 FROM src [RANGE 3 TUPLES]", [{}] * 6)
    assert out == [[{"col_0": 1}]] * 3 + [[]] * 3
    assert per_step("SELECT DSTREAM 1 FROM src [RANGE 3 TUPLES]", [{}] * 5) == [[]] * 5


def test_output_timestamp_is_arriving_tuple_timestamp():
    proc = build_processor(parse_select("SELECT RSTREAM a FROM src [RANGE 2 TUPLES]"))
    proc.process(Tuple({"a": 1}, T0, 1, "src"))
    res = proc.process(Tuple({"a": 2}, T0 + dt.timedelta(seconds=5), 2, "src"))
    assert [t.ts for t in res.outputs] == [T0 + dt.timedelta(seconds=5)] * 2


def test_self_join_two_windows_over_one_input():
    q = ("SELECT ISTREAM a:x AS l, b:x AS r FROM src [RANGE 2 TUPLES] AS a, src [RANGE 2 TUPLES] AS b "
         "WHERE a:x < b:x")
    out = per_step(q, [{"x": 1}, {"x": 2}, {"x": 3}])
    assert out == [[], [{"l": 1, "r": 2}], [{"l": 2, "r": 3}]]


def test_time_window_pruned_by_other_inputs_timestamp():
    q = "SELECT RSTREAM l:v AS l, r:v AS r FROM l [RANGE 1 TUPLES], r [RANGE 2 SECONDS]"
    proc = build_processor(parse_select(q))
    assert proc.inputs == ("l", "r")
    proc.process(Tuple({"v": "r0"}, T0, 1, "r"))
    assert [t.data for t in proc.process(Tuple({"v": "l0"}, T0 + dt.timedelta(seconds=2), 2, "l")).outputs] \
        == [{"l": "l0", "r": "r0"}]
    # at t=3 the r tuple of t=0 has left the time window although the tuple came from l
    assert proc.process(Tuple({"v": "l1"}, T0 + dt.timedelta(seconds=3), 3, "l")).outputs == []


def test_group_by_having_and_empty_global_group():
    rows = [{"k": "a"}, {"k": "b"}, {"k": "a"}, {"k": "c"}]
    q = "SELECT ISTREAM k, count(*) AS c FROM src [RANGE 4 TUPLES] GROUP BY k HAVING count(*) >= 2"
    assert run_query(q, {"src": rows}) == [{"k": "a", "c": 2}]
    q2 = "SELECT RSTREAM count(*) AS c, sum(x) AS s FROM src [RANGE 2 TUPLES] WHERE x > 10"
    assert run_query(q2, {"src": [{"x": 1}, {"x": 2}]}) == [{"c": 0, "s": None}] * 2


def test_group_keys_use_bql_equality():
    q = "SELECT RSTREAM count(*) AS c FROM src [RANGE 3 TUPLES] GROUP BY k"
    assert run_query(q, {"src": [{"k": 2}, {"k": 2.0}]})[-1] == {"c": 2}


def test_error_drops_only_that_step_and_keeps_previous_relation():
    rows = [{"int": 1}, {}, {"int": 3}, {"int": 4}]
    res = run_query_detailed("SELECT ISTREAM int FROM src [RANGE 2 TUPLES]", {"src": rows})
    assert res.outputs == [{"int": 1}, {"int": 3}, {"int": 4}]
    assert len(res.dropped) == 2 and res.dropped[0].tuple.data == {}
    assert "int" in res.dropped[0].error


def test_where_error_is_isolated():
    rows = [{"x": 1}, {"x": "a"}, {"x": 3}]
    res = run_query_detailed("SELECT RSTREAM x FROM src [RANGE 1 TUPLES] WHERE x + 1 > 0", {"src": rows})
    assert res.outputs == [{"x": 1}, {"x": 3}]
    assert len(res.dropped) == 1


def test_non_bool_where_is_an_error():
    res = run_query_detailed("SELECT RSTREAM x FROM src [RANGE 1 TUPLES] WHERE 6", {"src": [{"x": 1}]})
    assert res.outputs == [] and len(res.dropped) == 1


def test_volatile_projection_computed_once_per_row():
    out = per_step("SELECT RSTREAM random() AS r FROM src [RANGE 3 TUPLES]", [{}] * 4)
    # the row of tuple 2 keeps its value while it stays in the window
    assert out[1][1] == out[2][1] == out[3][0]


def test_volatile_where_evaluated_once_per_combination():
    out = per_step("SELECT RSTREAM i FROM src [RANGE 5 TUPLES] WHERE random() < 0.5",
                   [{"i": i} for i in range(30)])
    kept = set()
    for i, step in enumerate(out):
        ids = [r["i"] for r in step]
        assert ids == sorted(ids)
        window = set(range(max(0, i - 4), i + 1))
        expected = {j for j in window if j in kept or (j == i and i in ids)}
        if i in ids:
            kept.add(i)
        assert set(ids) == expected


def test_snapshot_restore_mid_stream_gives_identical_output():
    q = "SELECT ISTREAM k, count(*) AS c FROM src [RANGE 3 TUPLES] GROUP BY k"
    rows = [{"k": k} for k in "abacabbac"]
    full = per_step(q, rows)
    proc = build_processor(parse_select(q))
    out = []
    for i, row in enumerate(rows):
        if i == 4:
            snap = proc.snapshot()
            proc = build_processor(parse_select(q))
            proc.restore(snap)
        res = proc.process(Tuple(dict(row), T0 + dt.timedelta(seconds=i), i + 1, "src"))
        out.append([t.data for t in res.outputs])
    assert out == full


def test_snapshot_restore_join_with_cached_rows():
    q = "SELECT RSTREAM l:v AS a, r:v AS b FROM l [RANGE 2 TUPLES], r [RANGE 2 TUPLES]"
    feed = [("l", 1), ("r", 2), ("l", 3), ("r", 4), ("l", 5)]

    def run(cut):
        proc = build_processor(parse_select(q))
        out = []
        for i, (name, v) in enumerate(feed):
            if i == cut:
                snap = proc.snapshot()
                proc = build_processor(parse_select(q))
                proc.restore(snap)
            out.append([t.data for t in proc.process(Tuple({"v": v}, T0, i + 1, name)).outputs])
        return out

    assert run(3) == run(-1)


def test_union_all_feeds_branches_in_order():
    q = ("SELECT RSTREAM a FROM s1 [RANGE 1 TUPLES] UNION ALL SELECT RSTREAM a AS b FROM s1 [RANGE 1 TUPLES] "
         "UNION ALL SELECT RSTREAM a FROM s2 [RANGE 1 TUPLES]")
    proc = build_processor(parse_select(q))
    assert proc.inputs == ("s1", "s2")
    res = proc.process(Tuple({"a": 1}, T0, 1, "s1"))
    assert [t.data for t in res.outputs] == [{"a": 1}, {"b": 1}]
    assert [t.data for t in proc.process(Tuple({"a": 2}, T0, 2, "s2")).outputs] == [{"a": 2}]


def test_stream_like_udsf_duplicate():
    q = 'SELECT RSTREAM x FROM duplicate("src", 3) [RANGE 1 TUPLES]'
    proc = build_processor(parse_select(q))
    assert proc.inputs == ("src",)
    assert run_query(q, {"src": [{"x": 1}, {"x": 2}]}) == [{"x": 1}] * 3 + [{"x": 2}] * 3


def test_source_like_udsf_sequence_ticks():
    proc = build_processor(parse_select("SELECT RSTREAM seq FROM sequence(2) [RANGE 2 TUPLES]"))
    assert proc.inputs == ()
    outs = [[t.data for t in proc.tick(T0 + dt.timedelta(seconds=i)).outputs] for i in range(3)]
    assert outs == [[{"seq": 0}], [{"seq": 0}, {"seq": 1}], []]  # no tuple, no step


def test_finish_and_tick_are_quiet_for_plain_queries():
    proc = build_processor(parse_select("SELECT RSTREAM a FROM src [RANGE 2 TUPLES]"))
    assert proc.finish("src").outputs == [] and proc.tick(T0).outputs == []


def test_dispatch_to_other_kernels(monkeypatch):
    made = []
    for mod, cls in (("match", "MatchRecognizeProcessor"), ("timeplus", "WindowProcessor")):
        fake = types.ModuleType(f"sbpy.bql.runtime.{mod}")
        setattr(fake, cls, lambda sel, ctx, cls=cls: made.append(cls) or cls)
        monkeypatch.setitem(sys.modules, f"sbpy.bql.runtime.{mod}", fake)
    from sbpy.bql.ast import Select, StreamRef, WindowFunction, MatchRecognize  # noqa: F401

    sel = parse_select("SELECT RSTREAM a FROM src [RANGE 1 TUPLES]")
    assert build_processor(sel.replace(from_items=(StreamRef("src"),))) == "WindowProcessor"
    assert made == ["WindowProcessor"]


def test_emit_clause_dispatches_to_timeplus(monkeypatch):
    fake = types.ModuleType("sbpy.bql.runtime.timeplus")
    fake.WindowProcessor = lambda sel, ctx: ("timeplus", sel.emit.kind)
    monkeypatch.setitem(sys.modules, "sbpy.bql.runtime.timeplus", fake)
    from sbpy.bql.ast import EmitClause

    sel = parse_select("SELECT RSTREAM a FROM src [RANGE 1 TUPLES]")
    assert build_processor(sel.replace(emit=EmitClause("on_update"))) == ("timeplus", "on_update")


def test_fast_path_matches_general_path():
    q = "SELECT RSTREAM a * 2 AS d, * FROM src [RANGE 1 TUPLES] WHERE a > 1"
    rows = [{"a": 1}, {"a": 2}, {"a": "x"}, {"a": 3}]
    fast = build_processor(parse_select(q))
    slow = build_processor(parse_select(q))
    assert fast.fast and not (setattr(slow, "fast", False) or slow.fast)
    for i, row in enumerate(rows):
        a = fast.process(Tuple(dict(row), T0, i, "src"))
        b = slow.process(Tuple(dict(row), T0, i, "src"))
        assert [t.data for t in a.outputs] == [t.data for t in b.outputs]
        assert len(a.dropped) == len(b.dropped)
