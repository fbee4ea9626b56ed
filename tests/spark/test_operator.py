"""The fused pipeline (pure Python) and its snapshot; Spark runs it in tests/spark/test_query.py."""
from __future__ import annotations

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.operator import Pipeline, StageSpec
from sbpy.bql.spark.testing import pass_through, running_count


def _rows(items, start=1):
    """Journal rows from (input, data|None)."""
    return [(start + i, name, (start + i) * 1000, None if d is None else jf.encode_data(d), d is None)
            for i, (name, d) in enumerate(items)]


def _two_stages():
    return [StageSpec("s1", "", ("a", "b"), factory=pass_through),
            StageSpec("s2", "", ("s1",), factory=running_count)]


def _kinds(rows, kind):
    return [r for r in rows if r[0] == kind]


def test_order_across_inputs_and_stages():
    p = Pipeline(_two_stages())
    out = p.run(_rows([("a", {"x": 1}), ("b", {"x": 2}), ("a", {"x": 3})]))
    outs = _kinds(out, "out")
    assert [(r[1], r[2]) for r in outs] == [("s2", 1), ("s2", 2), ("s2", 3)]
    datas = [jf.decode_data(r[5]) for r in outs]
    assert [d["n"] for d in datas] == [1, 2, 3]
    assert [d["last"]["via_s1"] for d in datas] == ["a", "b", "a"]
    assert [r[3] for r in out] == list(range(len(out)))  # emission index
    stats = {r[1]: jf.decode_data(r[5]) for r in _kinds(out, "stat")}
    assert stats["s1"] == {"received": {"a": 2, "b": 1}, "sent": 3, "dropped": 0}
    assert stats["s2"] == {"received": {"s1": 3}, "sent": 3, "dropped": 0}


def test_snapshot_restore_continues():
    p = Pipeline(_two_stages())
    p.run(_rows([("a", {"x": 1}), ("a", {"x": 2})]))
    snap = p.snapshot()
    q = Pipeline(_two_stages())
    q.restore(snap)
    out = _kinds(q.run(_rows([("b", {"x": 3})], start=3)), "out")
    assert jf.decode_data(out[0][5])["n"] == 3


def test_failing_tuple_is_dropped_not_fatal():
    p = Pipeline(_two_stages())
    out = p.run(_rows([("a", {"x": 1}), ("a", {"fail": True}), ("b", {"drop": 1}), ("a", {"x": 4})]))
    dropped = _kinds(out, "dropped")
    assert [(r[1], r[2], r[8]) for r in dropped] == [("s2", 2, "other"), ("s2", 3, "input")]
    assert "ValueError: bad tuple 2" in dropped[0][6] and dropped[1][6] == "dropped on purpose"
    assert jf.decode_data(dropped[0][5])["fail"] is True
    assert [jf.decode_data(r[5])["n"] for r in _kinds(out, "out")] == [1, 2]
    assert jf.decode_data([r for r in _kinds(out, "stat") if r[1] == "s2"][0][5])["dropped"] == 2


def test_end_propagates_after_all_inputs_end():
    p = Pipeline(_two_stages())
    out = p.run(_rows([("a", {"x": 1}), ("a", None)]))
    assert _kinds(out, "end") == []
    out = p.run(_rows([("b", None), ("b", {"x": 9})], start=3))
    ends = _kinds(out, "end")
    assert [r[1] for r in ends] == ["s1", "s2"]
    # s2.finish emitted {"finished": "s1"} before its end
    finished = [jf.decode_data(r[5]) for r in _kinds(out, "out")]
    assert finished == [{"finished": "s1"}]
    snap = p.snapshot()
    q = Pipeline(_two_stages())
    q.restore(snap)
    assert q.run(_rows([("a", {"x": 1})], start=10)) == []  # ended stages ignore input


def test_done_ends_the_stage():
    p = Pipeline(_two_stages())
    out = p.run(_rows([("a", {"stop": True}), ("a", {"x": 2})]))
    assert [r[0] for r in out if r[0] != "stat"] == ["out", "end"]


def test_no_stages_passes_journal_through():
    p = Pipeline([])
    out = p.run(_rows([("a", {"x": 1}), ("a", None)]))
    assert [(r[0], r[1]) for r in out] == [("out", "a"), ("end", "a")]
