"""Named cases of the incremental kernel: each pins one rule of the reference that a plausible
incremental shortcut would break (all compared with the reference kernel, step by step)."""
from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from incremental_util import START, compare

from sbpy.bql.ast import RangeWindow
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import IncrementalSelectProcessor
from sbpy.bql.runtime.incremental.emitter import row_key
from sbpy.bql.runtime.incremental.ordered_window import OrderedWindow
from sbpy.bql.runtime.kernel import SelectProcessor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select, run_processor
from sbpy.bql.runtime.windows import Entry, Window
from sbpy.bql.values import multiset_key


def _stream(*rows, input="s1", step=100):
    return [(input, dict(r), i * step) for i, r in enumerate(rows)]


def _outputs(query, stream, kernel="auto"):
    proc = build_processor(parse_select(query), ProcessorContext(kernel=kernel))
    out = []
    for seq, (name, data, ms) in enumerate(stream, 1):
        out.append([t.data for t in proc.process(
            Tuple(dict(data), START + dt.timedelta(milliseconds=ms), seq, name)).outputs])
    return proc, out


def test_istream_emits_the_surviving_equal_group_row():
    # group 1 changes to {hi: 2} while group 2 already shows {hi: 2.0}: the reference emits the *last*
    # occurrence of the key in relation order, which is group 2's 2.0, not group 1's new 2
    q = "SELECT ISTREAM max(a:x) AS hi FROM s1 [RANGE 5 TUPLES] AS a GROUP BY a:k"
    stream = _stream({"k": 1, "x": None}, {"k": 2, "x": 2.0}, {"k": 1, "x": 2})
    _, out = _outputs(q, stream)
    assert out[2] == [{"hi": 2.0}] and type(out[2][0]["hi"]) is float
    compare(q, stream)


def test_dstream_emits_the_last_equal_row_not_the_removed_one():
    q = "SELECT DSTREAM a:x AS x FROM s1 [RANGE 2 TUPLES] AS a"
    stream = _stream({"x": 2}, {"x": 2.0}, {"x": 5})
    _, out = _outputs(q, stream)
    assert out[2] == [{"x": 2.0}] and type(out[2][0]["x"]) is float
    compare(q, stream)


def test_first_error_in_group_order_wins():
    q = "SELECT RSTREAM a:k AS k, sum(a:x) AS s FROM s1 [RANGE 4 TUPLES] AS a GROUP BY a:k"
    stream = _stream({"k": 1, "x": 1}, {"k": 2, "x": 2}, {"k": 2, "x": True}, {"k": 1, "x": "s"})
    proc = build_processor(parse_select(q))
    assert isinstance(proc, IncrementalSelectProcessor)
    res = run_processor(proc, {"s1": [d for _, d, _ in stream]})
    assert [("string" in d.error, "bool" in d.error) for d in res.dropped] == [(False, True), (True, False)]
    compare(q, stream)


def test_out_of_order_timestamp_is_pruned_like_the_reference():
    # the late x = 2 (ts 1 s) sits behind x = 1 (ts 5 s): the head never expires, yet x = 2 must leave
    q = "SELECT DSTREAM a:x AS x FROM s1 [RANGE 1 SECONDS] AS a"
    stream = [("s1", {"x": 1}, 5000), ("s1", {"x": 2}, 1000), ("s1", {"x": 3}, 5100), ("s1", {"x": 1}, 5200)]
    _, out = _outputs(q, stream)
    assert out[2] == [{"x": 2}]
    compare(q, stream)


def test_ordered_window_prunes_out_of_order_entries_anywhere():
    ref, inc = Window(RangeWindow(1, "seconds")), OrderedWindow(RangeWindow(1, "seconds"))
    for eid, sec in enumerate([5, 1, 5, 6, 7]):
        t = Tuple({}, START + dt.timedelta(seconds=sec))
        ref.add(Entry(eid, t))
        inc.add(Entry(eid, t))
        now = t.ts
        assert [e.eid for e in inc.prune(now)] == [e.eid for e in ref.prune(now)]
        assert [e.eid for e in inc.entries] == [e.eid for e in ref.entries]
    assert inc.descents == 0  # the late entry left: head pruning again


def test_irregular_entry_in_the_other_window_fails_the_join_step():
    q = "SELECT ISTREAM a:x AS ax FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b WHERE a:k = b:k"
    stream = [("s1", {"x": 1}, 0), ("s2", {"k": 1}, 10), ("s2", {"k": 1}, 20), ("s1", {"x": 2, "k": 1}, 30)]
    compare(q, stream)


def test_global_aggregate_over_an_empty_window_yields_one_row():
    q = "SELECT ISTREAM count(*) AS n, sum(a:x) AS s FROM s1 [RANGE 0.25 SECONDS] AS a WHERE a:x != 1"
    stream = [("s1", {"x": 1}, 0), ("s1", {"x": 2}, 1000), ("s1", {"x": 2.5}, 1100), ("s1", {"x": 1}, 5000)]
    _, out = _outputs(q, stream)
    assert out == [[{"n": 0, "s": None}], [{"n": 1, "s": 2}], [{"n": 2, "s": 4.5}], [{"n": 0, "s": None}]]
    compare(q, stream)


@pytest.mark.parametrize("query, reason", [
    ("SELECT ISTREAM a:x AS x, now() AS t FROM s1 [RANGE 3 TUPLES] AS a", "volatile"),
    ("SELECT ISTREAM a:x AS x FROM s1 [RANGE 3 TUPLES] AS a WHERE random() < 0.5", "volatile"),
])
def test_statements_that_stay_on_the_reference(query, reason):
    assert type(build_processor(parse_select(query))) is SelectProcessor, reason


def test_the_reference_can_be_forced(monkeypatch):
    q = "SELECT ISTREAM a:x AS x FROM s1 [RANGE 3 TUPLES] AS a"
    assert isinstance(build_processor(parse_select(q)), IncrementalSelectProcessor)
    assert type(build_processor(parse_select(q), ProcessorContext(kernel="reference"))) is SelectProcessor
    monkeypatch.setenv("SBPY_KERNEL", "reference")
    assert type(build_processor(parse_select(q))) is SelectProcessor


def test_kernel_description_names_the_join_and_aggregates():
    join = build_processor(parse_select(
        "SELECT ISTREAM a:x AS ax FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b WHERE a:k = b:k"))
    assert "hash join on a:k = b:k" in join.kernel_description()
    cross = build_processor(parse_select(
        "SELECT ISTREAM a:x AS ax FROM s1 [RANGE 3 TUPLES] AS a, s2 [RANGE 3 TUPLES] AS b WHERE a:k < b:k"))
    assert "cross product" in cross.kernel_description()
    grouped = build_processor(parse_select(
        "SELECT RSTREAM count(*) AS n, array_agg(a:x) AS xs FROM s1 [RANGE 3 TUPLES] AS a"))
    assert "incremental count" in grouped.kernel_description()
    assert "re-evaluated array_agg" in grouped.kernel_description()


def test_restore_after_a_failing_step_continues_exactly():
    # the row of x = "s" fails its projection and stays pending until it leaves; a snapshot taken
    # while it is pending must resume identically
    q = "SELECT ISTREAM a:x + 1 AS y FROM s1 [RANGE 2 TUPLES] AS a"
    stream = _stream({"x": 1}, {"x": "s"}, {"x": 2}, {"x": 3}, {"x": 4})
    for at in range(1, 6):
        compare(q, stream, frozenset({at}))


def test_restore_of_a_reference_snapshot_continues_as_the_reference():
    # an older checkpoint holds the reference kernel's snapshot: the processor takes it over exactly
    q = "SELECT DSTREAM a:x AS x FROM s1 [RANGE 3 TUPLES] AS a"
    stmt = parse_select(q)
    ref = build_processor(stmt, ProcessorContext(kernel="reference"))
    feed = [Tuple({"x": x}, START + dt.timedelta(seconds=i), i + 1, "s1") for i, x in enumerate([2, 2.0, 1, 3, 2, 4])]
    for t in feed[:3]:
        ref.process(t)
    inc = build_processor(stmt)
    inc.restore(ref.snapshot())
    assert "restored" in inc.kernel_description()
    for t in feed[3:5]:
        assert [o.data for o in inc.process(t).outputs] == [o.data for o in ref.process(t).outputs]
    again = build_processor(stmt)
    again.restore(inc.snapshot())  # a snapshot taken in that mode restores the same way
    for t in feed[5:]:
        assert [o.data for o in again.process(t).outputs] == [o.data for o in ref.process(t).outputs]


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=3),
                     st.binary(max_size=2))
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=2), inner, max_size=3)),
                       max_leaves=8)


@given(st.dictionaries(st.text(max_size=3), _VALUES, max_size=5))
def test_row_key_is_multiset_key(row):
    key, nan = row_key(row)
    assert not nan
    assert key == multiset_key(row) and hash(key) == hash(multiset_key(row))


@given(st.dictionaries(st.text(max_size=3), _VALUES, min_size=1, max_size=4), st.sampled_from(["top", "deep"]))
def test_row_key_flags_nan(row, where):
    first = next(iter(row))
    row[first] = float("nan") if where == "top" else [1, {"z": float("nan")}]
    assert row_key(row)[1]


@pytest.mark.parametrize("emitter", ["ISTREAM", "DSTREAM", "RSTREAM"])
def test_udsf_from_item_matches_reference(emitter):
    q = f'SELECT {emitter} a:x AS x, count(*) AS n FROM duplicate("s1", 2) [RANGE 3 TUPLES] AS a GROUP BY a:x'
    stream = _stream({"x": 1}, {"x": 2.0}, {"x": 2}, {"y": 1}, {"x": 1})
    compare(q, stream, frozenset({3}))
