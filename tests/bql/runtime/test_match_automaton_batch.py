"""``MatchRecognizeProcessor.process_batch`` (``bql/runtime/match/batch.py``, ``lane_batch.py``,
``mask_columns.py``) against ``process`` called tuple by tuple: the matcher without output shortcuts
(the reference), the automaton runner and the compiled lane. Random row patterns and row-local
DEFINEs over mostly in-order streams (late rows, keys of other types, NULLs and mixed types, int and
str partitions), every AFTER MATCH SKIP mode and ROWS PER MATCH form, cut into random batches, with
snapshots restored into any engine between batches. Each tuple's outputs (data, timestamp, seq) and
dropped tuples (tuple, error text, event type) must be identical, and so must ``finish``."""
import datetime as dt
import random

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sbpy.bql.runtime.match import runner
from sbpy.bql.runtime.match.batch import WINDOW
from sbpy.bql.runtime.processor import Tuple
from test_match_automaton_equivalence import T0, build, clauses, run, step_view
from test_match_automaton_lane import in_order_streams

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tuples_of(rows):
    return [Tuple(dict(r), T0 + dt.timedelta(seconds=i), i + 1, "s") for i, r in enumerate(rows)]


def run_batches(proc, rows, cuts, restore_at=(), restore_engine=None, body=None, bound=None):
    """``run``'s steps through ``process_batch`` over ``rows`` cut at ``cuts``; before each batch
    starting at an index in ``restore_at`` the state moves to a new processor of ``restore_engine``."""
    tups = tuples_of(rows)
    bounds = sorted({0, len(tups), *(c for c in cuts if c <= len(tups))})
    steps = []
    for a, b in zip(bounds, bounds[1:]):
        if a in restore_at:
            data = proc.snapshot()
            proc = build(body, restore_engine, bound)
            proc.restore(data)
        results = proc.process_batch(tups[a:b])
        assert len(results) == b - a
        steps += [step_view(r) for r in results]
    steps.append(step_view(proc.finish("s")))
    return steps


@SETTINGS
@given(clauses(), in_order_streams(), st.sampled_from([0, 1, 3, 10]), st.data())
def test_batches_equal_the_matcher_and_each_engine(body, rows, bound, data):
    ref = build(body, "matcher", bound, shortcuts=False)
    assume(ref is not None)
    cuts = data.draw(st.lists(st.integers(0, max(len(rows), 1)), max_size=4))
    want = run(ref, rows)
    assert run_batches(build(body, "compiled", bound), rows, cuts) == want
    assert run_batches(build(body, "automaton", bound), rows, cuts) == want


@SETTINGS
@given(clauses(), in_order_streams(), st.sampled_from([0, 3, 10]), st.data())
def test_snapshots_between_batches_restore_into_any_engine(body, rows, bound, data):
    ref = build(body, "matcher", bound, shortcuts=False)
    assume(ref is not None and rows)
    cuts = data.draw(st.lists(st.integers(0, len(rows)), max_size=4))
    points = set(data.draw(st.lists(st.sampled_from(sorted({0, *cuts})), max_size=3)))
    engines = data.draw(st.sampled_from([("compiled", "compiled"), ("compiled", "matcher"),
                                         ("automaton", "compiled"), ("compiled", "automaton")]))
    want = run(ref, rows)
    got = run_batches(build(body, engines[0], bound), rows, cuts, points, engines[1], body, bound)
    assert got == want


@SETTINGS
@given(clauses(), in_order_streams(), st.sampled_from([0, 3]), st.data())
def test_batches_then_single_tuples_continue_identically(body, rows, bound, data):
    """A processor fed by batches, then by ``process`` (and the reverse), matches the reference."""
    ref = build(body, "matcher", bound, shortcuts=False)
    assume(ref is not None and rows)
    half = data.draw(st.integers(0, len(rows)))
    proc = build(body, "compiled", bound)
    tups = tuples_of(rows)
    steps = [step_view(r) for r in proc.process_batch(tups[:half])]
    steps += [step_view(proc.process(t)) for t in tups[half:]]
    steps.append(step_view(proc.finish("s")))
    assert steps == run(ref, rows)


ABC = ("PARTITION BY k ORDER BY t MEASURES A.t AS a, LAST(B.t) AS b, C.t AS c ONE ROW PER MATCH "
       "PATTERN (A B+ C) DEFINE B AS B.v < PREV(B.v), C AS C.v > PREV(C.v)")
ALL_ROWS = ("PARTITION BY k ORDER BY t MEASURES CLASSIFIER() AS cls, MATCH_NUMBER() AS mn ALL ROWS PER MATCH "
            "AFTER MATCH SKIP TO NEXT ROW PATTERN (A B* C) DEFINE A AS v >= 2, B AS v <= PREV(v), C AS v > PREV(v)")


def ticker(n, seed, keys="abc", step=(0, 1, 1, 2)):
    rng = random.Random(seed)
    t, v, out = 0, {k: 10 for k in keys}, []
    for _ in range(n):
        k = rng.choice(keys)
        t += rng.choice(step)
        v[k] += rng.choice((-2, -1, -1, 0, 1, 1, 2))
        out.append({"k": k, "t": t, "v": v[k]})
    return out


@pytest.mark.parametrize("body", [ABC, ALL_ROWS])
@pytest.mark.parametrize("bound", [0, 2.5, 10])
def test_long_runs_equal_the_runner(body, bound):
    """Runs longer than a window (``WINDOW``) and than the kept masks (8192), with a late row, a
    float key and a row without a key in between: the batch path against the runner row by row."""
    rows = ticker(max(12_000, 3 * WINDOW), 7)
    rows[5000]["t"] -= 40  # late
    rows[6000]["t"] = rows[5999]["t"] + 0.5  # another key type: the general path
    del rows[7000]["t"]
    want = run(build(body, "automaton", bound), rows)
    assert run_batches(build(body, "compiled", bound), rows, [2000, 9000]) == want


def test_in_order_batches_do_not_reach_the_runner(monkeypatch):
    """The batch path takes in-order rows itself: the runner's ``advance`` runs only for the first row
    of each partition (the general path), as with ``process``."""
    calls = []
    advance = runner.AutomatonMatcher.advance
    monkeypatch.setattr(runner.AutomatonMatcher, "advance", lambda self: calls.append(1) or advance(self))
    rows = ticker(3000, 3, keys="ab")
    proc = build(ABC, "compiled", 3)
    tups = tuples_of(rows)
    steps = [step_view(r) for a, b in ((0, 100), (100, 1700), (1700, 3000)) for r in proc.process_batch(tups[a:b])]
    assert len(calls) == 2
    assert sum(len(s[0]) for s in steps) > 100
    steps.append(step_view(proc.finish("s")))
    monkeypatch.undo()
    assert steps == run(build(ABC, "matcher", 3, shortcuts=False), rows)


def test_partitions_keep_the_order_their_first_rows_arrived():
    """A partition whose first row is dropped is created by a later row: ``finish`` (which ends the
    partitions in creation order) reports as ``process`` does, across str and int partitions."""
    body = ("PARTITION BY k ORDER BY t MEASURES FIRST(t) AS f ALL ROWS PER MATCH WITH UNMATCHED ROWS "
            "PATTERN (A) DEFINE A AS v > 100")
    rows = [{"k": "b", "t": 5}, {"k": "a", "t": 1}, {"k": 2, "t": 1}, {"k": "a", "t": "x", "v": 1},
            {"k": "c", "t": 1}, {"k": "b", "t": 6}, {"k": "a", "t": 2}]
    want = run(build(body, "matcher", 100, shortcuts=False), rows)
    assert run_batches(build(body, "compiled", 100), rows, []) == want


def test_a_held_nan_key_takes_the_rows_one_by_one():
    """A NaN ORDER BY key held back (through the general path) cannot be bisected: the rows go through
    ``feed`` one by one. (The engines do not agree with each other on NaN keys row by row either, so
    the reference here is the compiled lane's ``process``.)"""
    rows = [{"k": "a", "t": t, "v": v} for t, v in zip(range(10), [5, 4, 3, 6, 2, 1, 7, 7, 3, 9])]
    rows.insert(6, {"k": "a", "t": float("nan"), "v": 1})
    rows += [{"k": "a", "t": 10 + i, "v": (i * 7) % 5} for i in range(40)]
    want = run(build(ABC, "compiled", 3), rows)
    assert sum(len(s[0]) for s in want) > 3
    assert run_batches(build(ABC, "compiled", 3), rows, [7, 12]) == want


def test_an_exception_of_process_is_that_tuples_entry():
    proc = build(ABC, "compiled", 3)

    class Odd:  # not a dict: ``process`` fails on it
        pass

    tups = tuples_of([{"k": "a", "t": 1, "v": 1}, {"k": "a", "t": 2, "v": 0}])
    tups.insert(1, Tuple(Odd(), T0, 9, "s"))  # type: ignore[arg-type]
    out = proc.process_batch(tups)
    assert isinstance(out[1], Exception) and not isinstance(out[0], Exception) and not isinstance(out[2], Exception)
    ref = build(ABC, "compiled", 3)
    assert step_view(out[0]) == step_view(ref.process(tups[0]))
    with pytest.raises(type(out[1])):
        ref.process(tups[1])
    assert step_view(out[2]) == step_view(ref.process(tups[2]))


def test_select_order_by_sorts_each_step():
    select = ("SELECT RSTREAM * FROM s MATCH_RECOGNIZE (ORDER BY t MEASURES A.t AS a, A.v AS v ONE ROW PER MATCH "
              "AFTER MATCH SKIP TO NEXT ROW PATTERN (A) DEFINE A AS v > 0) ORDER BY v DESC")
    from sbpy.bql.runtime.match import MatchRecognizeProcessor
    from sbpy.bql.runtime.testing import parse_select

    rows = [{"t": 1, "v": 1}, {"t": 1, "v": 3}, {"t": 1, "v": 2}, {"t": 5, "v": 1}, {"t": 9, "v": 4}]
    one = MatchRecognizeProcessor(parse_select(select), None, reorder_bound=3)
    many = MatchRecognizeProcessor(parse_select(select), None, reorder_bound=3)
    tups = tuples_of(rows)
    want = [step_view(one.process(t)) for t in tups]
    got = [step_view(r) for r in many.process_batch(tups)]
    assert got == want and any(len(s[0]) > 1 for s in got)
