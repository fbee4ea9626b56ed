"""The incremental kernel's specialised paths, each forced and compared with the general code it replaces.

- ``plain_select``: a select list of one-key items built as a plain dict vs ``SelectList.evaluate``
  (same keys, order, values and first error; repeated labels);
- ``DeltaEmitter``'s one-change / distinct-key steps vs its general per-key step, over random change
  sequences (same emitted items, same classes afterwards);
- ``CountAllState`` and the all-float ``SumState`` / ``AvgState`` vs the built-in aggregates;
- ``GroupItem`` snapshots of the version without its ``flat`` flag;
- whole statements with the shapes these paths serve, step by step against the reference kernel.

The generated, type-guarded steps (``stage_codegen`` in this kernel) are forced the same way in
``test_generated_kernel_paths.py``.
"""
from __future__ import annotations

import datetime as dt
import pickle
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incremental_util import canonical, compare, narrow_tuples, tuples, windows
from sbpy.bql.errors import BQLError
from sbpy.bql.eval import Env, Scope, compile_expr
from sbpy.bql.functions.builtin_aggregate import _avg, _count, _sum, naive_float_sum
from sbpy.bql.runtime.incremental.aggregates import AvgState, CountAllState, SumState
from sbpy.bql.runtime.incremental.emitter import DeltaEmitter, KeyClass, row_key
from sbpy.bql.runtime.incremental.groups import GroupItem
from sbpy.bql.runtime.incremental.plain_select import plain_evaluator, plain_items
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.projection import SelectList
from sbpy.bql.runtime.testing import parse_select

TS = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- plain select lists

PLAIN_ITEMS = ["a:x", "a:x AS y", "a:k AS y", "a:x + 1 AS z", "a:s", "a:x AS k", "a:b AS x", "a:m AS m",
               "a:x * 2", "a:ts()", "a:missing AS q", "a:k", "a:[\"s\"] AS s", "a:m.u AS mu"]
GENERAL_ITEMS = ["*", "a:* ", "a:m AS *", "a:x AS p.q", "a:k AS r[1]"]
ROW_VALUES = st.sampled_from([0, 2, 2.0, 1.5, None, "p", True, [1, 2], {"u": 1}])


def _select_list(items: list[str]) -> tuple[SelectList, list]:
    select = parse_select(f"SELECT RSTREAM {', '.join(items)} FROM s1 [RANGE 1 TUPLES] AS a")
    scope = Scope(("a",))
    return SelectList(select.projections, ("a",), lambda e: compile_expr(e, scope)), select.projections


def _outcome(fn, env):
    try:
        return "row", canonical(fn(env)), list(fn(env))
    except BQLError as err:
        return "error", str(err)


@SETTINGS
@given(st.lists(st.sampled_from(PLAIN_ITEMS + GENERAL_ITEMS), min_size=1, max_size=5)
       | st.lists(st.sampled_from(PLAIN_ITEMS), min_size=2, max_size=2),
       st.dictionaries(st.sampled_from(["x", "k", "s", "b", "m"]), ROW_VALUES))
def test_plain_select_list_equals_select_list_evaluate(items, data):
    select_list, projections = _select_list(items)
    plain = plain_evaluator(select_list, projections, ("a",))
    if all(i in PLAIN_ITEMS for i in items):
        assert plain_items(select_list, projections) is not None  # the specialised path is taken
        assert plain != select_list.evaluate
    else:
        assert plain == select_list.evaluate
    env = Env({"a": Tuple(data, TS)})
    assert _outcome(plain, env) == _outcome(select_list.evaluate, env)


# ---------------------------------------------------------------- emitter steps


class Item:
    __slots__ = ("pos", "data", "ekey", "nan")

    def __init__(self, pos: int, data: dict):
        self.pos, self.data = pos, data
        self.ekey, self.nan = row_key(data)


CHANGE_VALUES = [1, 1.0, 2, "p", None, float("nan")]


def _positions(cls) -> list[int]:
    """The positions of a key's items (its ``KeyClass``, or its one item kept bare)."""
    return list(cls.pos) if type(cls) is KeyClass else [cls.pos]


@SETTINGS
@given(st.sampled_from(["istream", "dstream"]), st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_emitter_fast_steps_equal_the_general_step(kind, seed, steps):
    """Two emitters see the same random changes; one takes ``apply`` (fast steps where they apply),
    the other always the general per-key step."""
    rng = random.Random(seed)
    fast, general = DeltaEmitter(kind), DeltaEmitter(kind)
    current: list[Item] = []
    pos = 0
    for _ in range(steps):
        gone = [i for i in current if rng.random() < 0.3]
        new = []
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            value = rng.choice(CHANGE_VALUES) if rng.random() < 0.9 else rng.choice(CHANGE_VALUES[:-1])
            new.append(Item(pos, {"v": value}))
            pos += 1
        current = [i for i in current if i not in gone] + new
        got = fast.apply(list(gone), list(new))
        want = general._apply_general(kind == "istream", list(gone), list(new))
        assert [i.pos for i in got] == [i.pos for i in want]
        assert {k: _positions(c) for k, c in fast.classes.items()} == \
            {k: _positions(c) for k, c in general.classes.items()}
        assert fast.nans.pos == general.nans.pos


def test_distinct_changes_is_taken_for_several_keys():
    emitter = DeltaEmitter("istream")
    items = [Item(0, {"v": 1}), Item(1, {"v": 2})]
    assert [i.pos for i in emitter._distinct_changes(True, [], items)] == [0, 1]
    assert emitter._distinct_changes(True, [], [Item(2, {"v": 1.0}), Item(3, {"v": 1})]) is None


# ---------------------------------------------------------------- aggregate states

NUMBER_LISTS = st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False, width=64),
                                  st.sampled_from([0.1, 0.2, 0.3, 1e16, -1e16, 1.0, -0.0])), max_size=12)


@SETTINGS
@given(NUMBER_LISTS, st.data())
def test_float_sum_and_avg_equal_the_builtins(values, data):
    """All-float groups sum their values directly; removals in any order keep the reference's result."""
    states = [SumState(), AvgState()]
    count = CountAllState()
    live: dict[int, float] = {}
    for pos, v in enumerate(values):
        for s in states:
            s.add(pos, v)
        count.add(pos, v)
        live[pos] = v
        if live and data.draw(st.booleans()):
            drop = data.draw(st.sampled_from(sorted(live)))
            for s in states:
                s.remove(drop)
            count.remove(drop)
            del live[drop]
        ordered = [live[p] for p in sorted(live)]
        assert canonical(states[0].result()) == canonical(_sum(ordered))
        assert canonical(states[1].result()) == canonical(_avg(ordered))
        assert count.result() == _count([True] * len(ordered))


MIXED_NUMBERS = st.one_of(st.floats(width=64), st.integers(-2**63, 2**63 - 1),
                         st.sampled_from([2**53 + 1, -2**53 - 1, 0.1, 1e16, -0.0, 3, 2**62]))


@SETTINGS
@given(st.lists(MIXED_NUMBERS, max_size=14), st.data())
def test_sum_chain_equals_the_builtins_as_rows_join_and_leave(values, data):
    """Mixed ints and floats (NaN, infinities, ints a float cannot hold exactly) joining at the end and
    leaving from the head (a window's order) or anywhere, results asked after every change or only now and
    then (a chain extended over several rows before it is read), a snapshot taken and restored midway: the
    built-ins' value after every step, and a known chain always the values' float sum."""
    states = [SumState(), AvgState()]
    live: dict[int, Any] = {}
    for pos, v in enumerate(values):
        for s in states:
            assert s.offer(pos, v)
        live[pos] = v
        if live and data.draw(st.integers(0, 2)) == 0:
            drop = min(live) if data.draw(st.booleans()) else data.draw(st.sampled_from(sorted(live)))
            for s in states:
                s.remove(drop)
            del live[drop]
        if data.draw(st.integers(0, 5)) == 0:
            states = [pickle.loads(pickle.dumps(s)) for s in states]
        if data.draw(st.booleans()):
            ordered = [live[p] for p in sorted(live)]
            assert repr(states[0].result()) == repr(_sum(ordered))  # repr: NaN, -0.0, int or float
            assert repr(states[1].result()) == repr(_avg(ordered))
        for s in states:
            if s.chain is not None:
                assert repr(s.chain) == repr(naive_float_sum(map(float, live.values())))


def test_sum_snapshot_without_chain_restores():
    """A ``SumState`` pickled by a version without the chain: restored with none, its result recomputed."""
    s = SumState()
    for pos, v in enumerate([0.1, 0.2, 3]):
        s.add(pos, v)
    old = SumState.__new__(SumState)
    old.__setstate__((None, {"values": dict(s.values), "floats": 2, "int_total": 3, "abs_total": 3}))
    assert old.chain is None and repr(old.result()) == repr(s.result()) == repr(_sum([0.1, 0.2, 3]))
    assert old.chain == s.chain


def test_mixed_sum_still_converts_each_value():
    s = SumState()
    for pos, v in enumerate([2**53, 1, 0.5]):
        s.add(pos, v)
    assert canonical(s.result()) == canonical(_sum([2**53, 1, 0.5]))


# ---------------------------------------------------------------- group items


def test_group_item_snapshot_without_flat_flag_restores():
    item = GroupItem(3, {"k": 1, "xs": [1, 2]}, keyed=True)
    old = GroupItem.__new__(GroupItem)  # what unpickling an older version's item does: no "flat"
    old.__setstate__((None, {"pos": 3, "data": item.data, "ekey": item.ekey, "nan": False}))
    assert old.flat is False and old.data == item.data and old.ekey == item.ekey
    again = pickle.loads(pickle.dumps(item))
    assert (again.flat, again.pos, again.data, again.ekey) == (False, 3, item.data, item.ekey)
    assert GroupItem(0, {"k": 1, "n": 2.0}, keyed=False).flat is True


# ---------------------------------------------------------------- statements of these shapes

GROUP_SELECTS = ["a:k, count(*) AS n, sum(a:x) AS total", "count(*) AS n, sum(a:x) AS n",
                 "a:k AS k, count(*), avg(a:x) AS m, count(*) + 1 AS c", "count(*) AS n.c, a:k AS k",
                 "sum(a:x) AS s, a:k AS s", "max(a:x) AS hi, min(a:x) AS lo, a:k"]


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM", "RSTREAM"]), st.sampled_from(GROUP_SELECTS), windows(),
       st.one_of(tuples(), narrow_tuples()))
def test_group_shapes_match_reference(emitter, items, window, stream):
    compare(f"SELECT {emitter} {items} FROM s1 {window} AS a GROUP BY a:k", stream)


@SETTINGS
@given(st.sampled_from(["ISTREAM", "DSTREAM", "RSTREAM"]),
       st.sampled_from(["a:x AS ax, b:x AS bx", "a:k AS k, a:k AS k, b:s AS s", "a:x AS v, b:x AS v"]),
       windows(), windows(), st.one_of(tuples(("s1", "s2")), narrow_tuples(("s1", "s2"))))
def test_pair_join_shapes_match_reference(emitter, items, w1, w2, stream):
    compare(f"SELECT {emitter} {items} FROM s1 {w1} AS a, s2 {w2} AS b WHERE a:k = b:k", stream)


@pytest.mark.parametrize("items", ["a:x AS v, a:k AS v", "a:x, a:x AS x", "a:k AS k, a:x AS y"])
@SETTINGS
@given(stream=st.one_of(tuples(), narrow_tuples()))
def test_single_stream_plain_select_matches_reference(items, stream):
    compare(f"SELECT ISTREAM {items} FROM s1 [RANGE 3 TUPLES] AS a", stream)


def test_snapshot_with_count_star_as_count_state_restores_exactly():
    """A snapshot of the version before ``CountAllState`` (count(*) kept as a ``CountState``)."""
    from incremental_util import build_pair
    from sbpy.bql.runtime import ProcessorContext, build_processor
    from sbpy.bql.runtime.incremental.aggregates import CountState

    query = "SELECT ISTREAM a:k AS k, count(*) AS n, sum(a:x) AS s FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k"
    stmt, inc, ref = build_pair(query)
    rows = [{"k": i % 2, "x": i} for i in range(8)]

    def step(proc, i):
        return [canonical(t.data) for t in proc.process(Tuple(dict(rows[i]), TS, i + 1, "s1")).outputs]

    for i in range(4):
        assert step(inc, i) == step(ref, i)
    for group in inc.table.groups.values():  # turn the snapshot into the older version's
        old = CountState()
        old.rows = set(group.members)
        group.states[0] = old
    restored = build_processor(stmt, ProcessorContext())
    restored.restore(inc.snapshot())
    for i in range(4, 8):
        assert step(restored, i) == step(ref, i)


@pytest.mark.parametrize("query", [
    "SELECT ISTREAM a:x AS x, a:k AS k FROM s1 [RANGE 3 TUPLES] AS a",
    "SELECT DSTREAM a:k AS k, b:x AS x FROM s1 [RANGE 2 TUPLES] AS a, s2 [RANGE 2 TUPLES] AS b "
    "WHERE a:k = b:k",
])
def test_snapshot_with_row_lists_and_envs_restores_exactly(query):
    """A snapshot of the version that kept every entry's rows in a list and every row's Env."""
    from incremental_util import build_pair
    from sbpy.bql.runtime import ProcessorContext, build_processor

    stmt, inc, ref = build_pair(query)
    rows = [("s1" if i % 3 else "s2", {"k": i % 2, "x": i}) for i in range(10)]

    def step(proc, i):
        name, data = rows[i]
        return [canonical(t.data) for t in proc.process(Tuple(dict(data), TS, i + 1, name)).outputs]

    for i in range(5):
        assert step(inc, i) == step(ref, i)
    relation = inc.relation
    assert any(type(v) is not list for v in relation.by_eid.values())  # the one-row form is in use
    relation.by_eid = {eid: v if type(v) is list else [v] for eid, v in relation.by_eid.items()}
    restored = build_processor(stmt, ProcessorContext())
    restored.restore(inc.snapshot())
    for i in range(5, 10):
        assert step(restored, i) == step(ref, i)
