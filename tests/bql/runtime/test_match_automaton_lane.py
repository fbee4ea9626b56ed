"""The compiled lane (``bql/runtime/match/lane.py``) against the references: the matcher
(``SBPY_MATCH_ENGINE=matcher``, without any output shortcut) and the automaton driven by its runner
alone (``automaton``). Random row patterns and row-local DEFINEs (the generators of
``test_match_automaton_equivalence``) over random streams that are mostly in order — so most rows take
the lane — with equal keys, late and out-of-order rows, keys of other types (float, NaN, str, NULL, absent)
that the lane refuses, NULLs and mixed types in the DEFINE fields, several partitions, every AFTER
MATCH SKIP mode and ROWS PER MATCH form. Each step's outputs (data, timestamp, seq) and dropped tuples
(tuple, error text, event type) must be identical, also across snapshot/restore into any engine."""
import datetime as dt

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sbpy.bql.runtime.match import runner
from sbpy.bql.runtime.processor import Tuple
from test_match_automaton_equivalence import T0, build, clauses, run

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _NaN:
    """Stands for a float NaN in compared results: ``nan == nan`` is False unless both are the same
    object, which a snapshot/restore changes."""

    def __eq__(self, other):
        return type(other) is _NaN

    __hash__ = None


def same(value):
    """``value`` with every float NaN (in lists, tuples, dicts) replaced by ``_NaN()``."""
    if type(value) is float and value != value:
        return _NaN()
    if type(value) in (list, tuple):
        return type(value)(same(v) for v in value)
    if type(value) is dict:
        return {k: same(v) for k, v in value.items()}
    return value


@st.composite
def in_order_streams(draw):
    """Rows with ``t`` mostly rising (steps 0–2), sometimes back, sometimes of another type."""
    n = draw(st.integers(0, 60))
    out = []
    t = 0
    for _ in range(n):
        t += draw(st.sampled_from([0, 1, 1, 1, 2, 2, 5, -1, -4]))
        row = {"k": draw(st.sampled_from(["x", "y", "z", 1])), "t": t}
        odd = draw(st.sampled_from([None] * 12 + ["float", "str", "null", "absent", "nan"]))
        if odd == "float":
            row["t"] = t + 0.5
        elif odd == "nan":
            row["t"] = float("nan")
        elif odd == "str":
            row["t"] = str(t)
        elif odd == "null":
            row["t"] = None
        elif odd == "absent":
            del row["t"]
        v = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4, None, 2.0, "2", "absent"]))
        if v != "absent":
            row["v"] = v
        if draw(st.booleans()):
            row["w"] = draw(st.sampled_from([None, 1, 3]))
        out.append(row)
    return out


@SETTINGS
@given(clauses(), in_order_streams(), st.sampled_from([0, 1, 3, 10]))
def test_lane_equals_matcher_and_runner(body, rows, bound):
    ref = build(body, "matcher", bound, shortcuts=False)
    assume(ref is not None)
    want = same(run(ref, rows))
    assert same(run(build(body, "compiled", bound), rows)) == want
    assert same(run(build(body, "automaton", bound), rows)) == want


@SETTINGS
@given(clauses(), in_order_streams(), st.sampled_from([0, 3, 10]), st.data())
def test_lane_snapshot_restore_continues_identically(body, rows, bound, data):
    ref = build(body, "matcher", bound, shortcuts=False)
    assume(ref is not None and rows)
    points = set(data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=3)))
    engines = data.draw(st.sampled_from([("compiled", "compiled"), ("compiled", "matcher"),
                                         ("automaton", "compiled"), ("compiled", "automaton")]))
    want = run(ref, rows)
    assert same(run(build(body, engines[0], bound), rows, points, engines[1], body, bound)) == same(want)


ABC = ("PARTITION BY k ORDER BY t MEASURES A.t AS a, LAST(B.t) AS b, C.t AS c ONE ROW PER MATCH "
       "PATTERN (A B+ C) DEFINE B AS B.v < PREV(B.v), C AS C.v > PREV(C.v)")


def test_in_order_rows_take_the_lane(monkeypatch):
    """An in-order stream goes through the lane: the runner's ``advance`` is not called for its
    rows (only for the first row of each partition, which takes the general path)."""
    calls = []
    advance = runner.AutomatonMatcher.advance
    monkeypatch.setattr(runner.AutomatonMatcher, "advance", lambda self: calls.append(1) or advance(self))
    proc = build(ABC, None, 3)
    assert proc.engine_description().endswith("in-order rows through the compiled lane")
    prices = [5, 4, 3, 6, 6, 2, 1, 0, 9, 8, 9] * 20
    outs = []
    for i, v in enumerate(prices):
        step = proc.process(Tuple({"k": "ab"[i % 2], "t": i, "v": v}, T0 + dt.timedelta(seconds=i), i + 1, "s"))
        outs += [o.data for o in step.outputs]
    assert len(calls) == 2
    assert outs and all(set(o) == {"k", "a", "b", "c"} for o in outs)
    ref = build(ABC, "matcher", 3, shortcuts=False)
    rows = [{"k": "ab"[i % 2], "t": i, "v": v} for i, v in enumerate(prices)]
    assert run(build(ABC, None, 3), rows) == run(ref, rows)


def test_engines_in_the_description():
    assert build(ABC, "automaton", 3).engine_description() == "deterministic automaton (1 states built so far)"
    assert build(ABC, "matcher", 3).engine_description() == "backtracking matcher: the matcher was asked for"
    # a measure reading a later row waits for it: no lane
    nxt = ABC.replace("C.t AS c", "NEXT(C.t) AS c")
    assert build(nxt, "compiled", 3).engine_description() == "deterministic automaton (1 states built so far)"


def test_rows_producing_nothing_share_an_unchangeable_result():
    import pytest

    proc = build(ABC, None, 3)
    steps = [proc.process(Tuple({"k": "a", "t": i, "v": 5}, T0, i + 1, "s")) for i in range(4)]
    assert steps[1] is steps[2] is steps[3] and steps[0] is not steps[1]  # the first row takes the general path
    assert steps[1].outputs == [] and steps[1].dropped == [] and not steps[1].done
    with pytest.raises(TypeError):
        steps[1].outputs.append(1)
    with pytest.raises(TypeError):
        steps[1].dropped.extend([1])
    with pytest.raises(TypeError):
        steps[1].done = True
