"""The automaton engine's own machinery against the matcher: long partitions (the row-mask store is
trimmed while an attempt stays live, long matches replayed), the state table starting over when full,
the generated DEFINE code for every comparison operator and operand type, and the engine switch."""
import datetime as dt
import random

import pytest
from sbpy.bql.runtime.match import MatchRecognizeProcessor, dfa
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def build(body, engine, bound=10):
    return MatchRecognizeProcessor(parse_select(f"SELECT RSTREAM * FROM s MATCH_RECOGNIZE ({body})"),
                                   None, reorder_bound=bound, engine=engine)


def outputs(proc, rows):
    steps = []
    for i, r in enumerate(rows):
        res = proc.process(Tuple(dict(r), T0 + dt.timedelta(seconds=i), i + 1, "s"))
        steps.append(([o.data for o in res.outputs], [(d.error, d.event_type) for d in res.dropped]))
    res = proc.finish("s")
    steps.append(([o.data for o in res.outputs], [(d.error, d.event_type) for d in res.dropped]))
    return steps


def same_as_matcher(body, rows, bound=10):
    auto = build(body, "automaton", bound)
    assert auto.automaton is not None, auto.engine_description()
    got = outputs(auto, rows)
    assert got == outputs(build(body, "matcher", bound), rows)
    return got


def test_long_live_attempts_and_long_matches():
    rng = random.Random(7)
    rows, t = [], 0
    for run in range(12):  # long runs of v = 1 ended by a 2 (a match) or a 3 (no match)
        for _ in range(rng.randrange(500, 3000)):
            rows.append({"t": t, "v": 1})
            t += 1
        rows.append({"t": t, "v": rng.choice([2, 3])})
        t += 1
    body = ("ORDER BY t MEASURES FIRST(t) AS t0, LAST(t) AS t1, count(A.t) AS na ONE ROW PER MATCH "
            "PATTERN (A+ B) DEFINE A AS v = 1, B AS v = 2")
    got = same_as_matcher(body, rows)
    assert sum(len(out) for out, _ in got) > 0


def test_guard_pattern_without_match(monkeypatch):
    rows = [{"t": i, "v": 1} for i in range(12_000)]
    body = "ORDER BY t MEASURES FIRST(A.t) AS t0 PATTERN (A+ B+ C+ E) DEFINE A AS v > 0, B AS v > 0, " \
           "C AS v > 0, E AS v < 0"
    assert all(out == [] for out, _ in same_as_matcher(body, rows))


def test_state_table_starting_over(monkeypatch):
    monkeypatch.setattr(dfa, "MAX_STATES", 3)
    rng = random.Random(3)
    rows = [{"k": rng.choice("xyz"), "t": i, "v": rng.randrange(5)} for i in range(600)]
    body = ("PARTITION BY k ORDER BY t MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS m ALL ROWS PER MATCH "
            "AFTER MATCH SKIP TO NEXT ROW PATTERN ((A | B){2,4}? C+ | A B*) "
            "DEFINE A AS v < PREV(v), B AS v > PREV(v), C AS v = 2")
    proc = build(body, "automaton")
    got = same_as_matcher(body, rows)
    assert sum(len(out) for out, _ in got) > 0
    outputs(proc, rows)
    assert len(proc.automaton.table) <= 3


VALUES = [0, 1, 2, 2.0, 2.5, -1, None, "a", "b", True, False, [1], {"x": 1}, "absent"]


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">=", "<>"])
@pytest.mark.parametrize("rhs", ["PREV(v)", "PREV(v, 2)", "w", "2", "2.0", "\"a\"", "NULL", "true"])
def test_generated_conditions(op, rhs):
    rng = random.Random(f"{op}{rhs}")
    rows = []
    for i in range(120):
        row = {"t": i}
        for key in ("v", "w"):
            value = rng.choice(VALUES)
            if value != "absent":
                row[key] = value
        rows.append(row)
    body = (f"ORDER BY t MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH WITH UNMATCHED ROWS "
            f"PATTERN ((A | B)+) DEFINE A AS v {op} {rhs}, B AS {rhs} {op} v")
    same_as_matcher(body, rows)


def test_engine_switch(monkeypatch):
    body = "ORDER BY t MEASURES count(*) AS n PATTERN (A B) DEFINE A AS v > 1"
    monkeypatch.setenv("SBPY_MATCH_ENGINE", "matcher")
    assert build(body, None).engine_description() == "backtracking matcher: the matcher was asked for"
    assert build(body, "auto").engine_description() == ("deterministic automaton (1 states built so far), "
                                                        "in-order rows through the compiled lane")
    assert build(body, "automaton").engine_description() == "deterministic automaton (1 states built so far)"
    monkeypatch.setenv("SBPY_MATCH_ENGINE", "automaton")
    assert build(body, None).automaton is not None
    monkeypatch.setenv("SBPY_MATCH_ENGINE", "nfa")
    with pytest.raises(ValueError, match="SBPY_MATCH_ENGINE"):
        build(body, None)


@pytest.mark.parametrize("engine", ["automaton", "matcher"])
def test_snapshot_of_an_attempt_whose_match_an_earlier_one_shadowed(engine):
    """Attempt 1's MATCH is shadowed by attempt 0's at the same row, so it keeps a thread its lone
    replay would have cut: the snapshot still gives it labels, and both engines go on identically."""
    body = ("PARTITION BY k ORDER BY t MEASURES MATCH_NUMBER() AS mn, CLASSIFIER() AS cls, FIRST(t) AS f "
            "ONE ROW PER MATCH PATTERN ({- (A)*? -} (B)+) DEFINE A AS v = PREV(v)")
    rows = [{"k": "x", "t": 0, "v": 0}] * 3
    want = outputs(build(body, "matcher", 0), rows)
    first = build(body, "automaton", 0)
    head = [first.process(Tuple(dict(r), T0 + dt.timedelta(seconds=i), i + 1, "s")) for i, r in enumerate(rows[:2])]
    second = build(body, engine, 0)
    second.restore(first.snapshot())
    rest = outputs_from(second, rows, 2)
    assert [([o.data for o in r.outputs], [(d.error, d.event_type) for d in r.dropped]) for r in head] + rest == want


def outputs_from(proc, rows, start):
    steps = []
    for i in range(start, len(rows)):
        res = proc.process(Tuple(dict(rows[i]), T0 + dt.timedelta(seconds=i), i + 1, "s"))
        steps.append(([o.data for o in res.outputs], [(d.error, d.event_type) for d in res.dropped]))
    res = proc.finish("s")
    steps.append(([o.data for o in res.outputs], [(d.error, d.event_type) for d in res.dropped]))
    return steps
