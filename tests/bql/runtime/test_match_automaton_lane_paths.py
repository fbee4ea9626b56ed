"""The compiled lane's shortcuts against the matcher (``SBPY_MATCH_ENGINE=matcher``, without any output
shortcut): the DEFINE fields a row reads of the rows before it carried from the row before
(``RowMasks.inline_source`` with ``carry``), the held rows kept at the end of the row list while the
lane is live, the masks forgotten on long streams, and automata whose states keep their fused steps in
dicts (more pattern variables than ``dfa.LISTED_BITS``) or in lists. Each step's outputs and dropped
tuples must be identical, also across snapshot/restore into any engine."""
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sbpy.bql.runtime.match import dfa
from test_match_automaton_equivalence import build, run
from test_match_automaton_lane import in_order_streams, same

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# comparisons of a field of the row with fields of the rows before it (each generated inline, so the
# lane carries ``v``, ``PREV(v)``, ... from one row to the next)
CARRIED = ["v < PREV(v)", "v > PREV(v)", "PREV(v, 2) < v", "PREV(v) = PREV(v, 2)", "w < PREV(v)",
           "PREV(w) >= v", "v > PREV(v, 3)", "PREV(v, 2) != PREV(w, 2)", "v = 2"]
PATTERNS = ["A B+ C", "A+ B", "(A | B)+ C?", "A B* C+", "A? B{2,} C", "(A B)+"]


@st.composite
def carried_clauses(draw):
    pattern = draw(st.sampled_from(PATTERNS))
    used = sorted({c for c in pattern if c in "ABC"})
    defines = ", ".join(f"{x} AS {draw(st.sampled_from(CARRIED))}" for x in used)
    measures = draw(st.sampled_from([
        "FIRST(t) AS f, LAST(t) AS l, MATCH_NUMBER() AS mn",  # the SELECT * shortcut
        "MATCH_ROWTIME() AS rt, count(*) AS n, LAST(v) AS lv",  # the general rendering
    ]))
    skip = draw(st.sampled_from(["", "AFTER MATCH SKIP TO NEXT ROW"]))
    part = draw(st.sampled_from(["PARTITION BY k ", ""]))
    return (f"{part}ORDER BY t MEASURES {measures} ONE ROW PER MATCH {skip} PATTERN ({pattern}) "
            f"DEFINE {defines}")


@SETTINGS
@given(carried_clauses(), in_order_streams(), st.sampled_from([0, 1, 3, 10]), st.data())
def test_carried_fields_equal_the_matcher(body, rows, bound, data):
    ref = build(body, "matcher", bound, shortcuts=False)
    lane = build(body, "compiled", bound)
    assert "compiled lane" in lane.engine_description()
    want = same(run(ref, rows))
    assert same(run(lane, rows)) == want
    points = set(data.draw(st.lists(st.integers(0, max(len(rows) - 1, 0)), max_size=3)))
    engine = data.draw(st.sampled_from(["compiled", "matcher", "automaton"]))
    assert same(run(build(body, "compiled", bound), rows, points, engine, body, bound)) == want


def _walk(n, seed, partitions="xy", late_every=0):
    """``n`` rows of random walks of ``v`` (and ``w``) per partition, ``t`` rising; every
    ``late_every``-th row (0: none) goes three steps back in ``t`` (the lane refuses it)."""
    rng = random.Random(seed)
    level = {k: 100 for k in partitions}
    rows = []
    for i in range(n):
        k = rng.choice(partitions)
        level[k] += rng.choice((-2, -1, -1, 0, 1, 1, 2))
        t = i - 3 if late_every and i % late_every == late_every - 1 else i
        rows.append({"k": k, "t": t, "v": level[k], "w": level[k] + rng.choice((-1, 0, 1))})
    return rows


def test_long_stream_forgets_masks_and_rows_as_the_matcher():
    """20,000 rows of one partition through the lane: it forgets rows and masks many times (its
    masks stay bounded), with a late row now and then sending rows through the general path."""
    body = ("PARTITION BY k ORDER BY t MEASURES FIRST(t) AS f, LAST(B.t) AS b, C.t AS c, "
            "MATCH_NUMBER() AS mn ONE ROW PER MATCH PATTERN (A B+ C) "
            "DEFINE B AS v < PREV(v) AND w <= PREV(w, 2), C AS v > PREV(v)")
    rows = _walk(20_000, 11, "x", late_every=997)
    lane = build(body, "compiled", 3)
    got = run(lane, rows)
    part = lane.parts[(("s", "x"),)]
    part.sync()
    assert len(part.matcher.masks) <= 8193 and part.matcher.mbase > 8192
    assert sum(len(s[0]) for s in got) > 1000
    assert got == run(build(body, "matcher", 3, shortcuts=False), rows)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(in_order_streams(), st.sampled_from([0, 3, 10]))
def test_many_variables_keep_fused_steps_in_dicts(rows, bound):
    body = ("PARTITION BY k ORDER BY t MEASURES FIRST(t) AS f, LAST(t) AS l, CLASSIFIER() AS c "
            "ONE ROW PER MATCH PATTERN (A B? C* D E? F* G) DEFINE A AS v < PREV(v), B AS v = 1, "
            "C AS v >= 2, D AS v > PREV(v), E AS w IS NULL, F AS v != 3, G AS PREV(v, 2) < v")
    lane = build(body, "compiled", bound)
    assert lane.automaton.listed == 0  # 7 variables > dfa.LISTED_BITS
    assert same(run(lane, rows)) == same(run(build(body, "matcher", bound, shortcuts=False), rows))


def test_few_variables_keep_fused_steps_in_lists():
    body = "ORDER BY t MEASURES FIRST(t) AS f PATTERN (A B+ C) DEFINE B AS v < PREV(v), C AS v > PREV(v)"
    lane = build(body, "compiled", 3)
    assert lane.automaton.listed == 1 << 3 and dfa.LISTED_BITS >= 3
    rows = _walk(500, 3, "x")
    assert run(lane, rows) == run(build(body, "matcher", 3, shortcuts=False), rows)


def test_candidates_after_a_match_ending_before_the_resolving_row():
    """A greedy attempt dies a row after its candidate match ended, so the skip target is the row
    that resolves it (``nxt == newest`` in the lane): the attempt started at that row keeps its own
    candidate (a one-row match) — the lane forgets only the candidates and shadowed attempts before
    the skip target."""
    body = ("ORDER BY t MEASURES FIRST(t) AS f, LAST(t) AS l, count(*) AS n ONE ROW PER MATCH "
            "PATTERN (A B*) DEFINE A AS v > 0, B AS v < PREV(v)")
    rows = [{"t": i, "v": v} for i, v in enumerate([5, 4, 3, 6, 7, 2, 9, 9, 1, 8, 8])]
    for bound in (0, 3):
        got = run(build(body, "compiled", bound), rows)
        assert [o["f"] for step in got for o, _, _ in step[0]] == [0, 3, 4, 6, 7, 9, 10]
        assert got == run(build(body, "matcher", bound, shortcuts=False), rows)
    defines = {"A": "A AS v >= PREV(v)", "B": "B AS v < PREV(v)", "C": "C AS w > PREV(w)"}
    rows = _walk(1500, 5, late_every=211)
    for pattern in ("A B*", "A B+ C?", "A{2,} B*", "(A B)+ C*"):
        for skip in ("AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO LAST B"):
            used = ", ".join(d for x, d in defines.items() if x in pattern)
            body = (f"PARTITION BY k ORDER BY t MEASURES FIRST(t) AS f, LAST(t) AS l ONE ROW PER MATCH "
                    f"{skip} PATTERN ({pattern}) DEFINE {used}")
            lane = build(body, "compiled", 3)
            assert "compiled lane" in lane.engine_description()
            assert run(lane, rows) == run(build(body, "matcher", 3, shortcuts=False), rows)
