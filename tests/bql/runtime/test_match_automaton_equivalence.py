"""The deterministic automaton engine against the matcher (the reference): random row patterns
(concatenation, alternation, ``* + ? {n} {n,} {n,m}``, reluctant forms, grouping, exclusion, PERMUTE)
over a few variables with random row-local DEFINEs, random streams (two partitions, equal and
out-of-order ORDER BY keys, late rows dropped, NULLs, absent fields, int/float), every AFTER MATCH SKIP
mode and every ROWS PER MATCH form. Each step's outputs (data, timestamp, seq) and dropped tuples
(tuple, error text, event type) must be identical; snapshot/restore at random steps (into either
engine) must continue identically."""
import datetime as dt

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sbpy.bql.errors import BQLError
from sbpy.bql.runtime.match import MatchRecognizeProcessor
from sbpy.bql.runtime.match.output import OutputBuilder
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
VARS = "ABCD"

CONDITIONS = [
    "v < PREV(v)", "v > PREV(v)", "v = PREV(v)", "v >= 2", "v < 2", "v = 1", "v != 3", "v <= w",
    "w IS NULL", "v % 2 = 0", "PREV(v, 2) < v", "{x}.v > 1", 'CLASSIFIER() = "{x}"', "true", "false",
    "coalesce(PREV(w), 0) < v", "LAST({x}.v) = 2",
]
SIMPLE_MEASURES = ("MATCH_NUMBER() AS mn, CLASSIFIER() AS cls, FIRST(t) AS f, LAST(v) AS l, w AS w, FIRST(v, 2) AS f2, "
                   "LAST(t, 1) AS l1, LAST(t) AS k")  # k: also the PARTITION BY column's name
SKIPS = ["", "AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW",
         "AFTER MATCH SKIP TO FIRST {x}", "AFTER MATCH SKIP TO LAST {x}"]
ROWS_PER_MATCH = ["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH SHOW EMPTY MATCHES",
                  "ALL ROWS PER MATCH OMIT EMPTY MATCHES", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]
MEASURES = "MATCH_NUMBER() AS mn, CLASSIFIER() AS cls, FIRST(t) AS f, LAST(t) AS l, count(*) AS n, PREV(v) AS pv"


def _quantifier():
    return st.sampled_from(["*", "+", "?", "{2}", "{1,}", "{0,2}", "{1,3}", "{2,}"]).flatmap(
        lambda q: st.sampled_from([q, q + "?"]))


def patterns(max_leaves=6):
    leaf = st.sampled_from(VARS)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, inner).map(lambda p: f"{p[0]} {p[1]}"),
            st.tuples(inner, inner, inner).map(lambda p: " ".join(p)),
            st.tuples(inner, inner).map(lambda p: f"({p[0]} | {p[1]})"),
            st.tuples(inner, _quantifier()).map(lambda p: f"({p[0]}){p[1]}"),
            st.tuples(leaf, _quantifier()).map(lambda p: f"{p[0]}{p[1]}"),
            inner.map(lambda p: "{- " + p + " -}"),
            st.tuples(leaf, leaf).map(lambda p: f"PERMUTE({p[0]}, {p[1]})"),
        )
    return st.recursive(leaf, extend, max_leaves=max_leaves)


@st.composite
def clauses(draw):
    pattern = draw(patterns())
    used = sorted({c for c in pattern if c in VARS})
    defined = draw(st.lists(st.sampled_from(used), unique=True, min_size=1, max_size=len(used)))
    defines = ", ".join(f"{x} AS " + draw(st.sampled_from(CONDITIONS)).format(x=x) for x in defined)
    if draw(st.booleans()):
        measures = MEASURES + "".join(f", LAST({x}.t) AS l{x}, sum({x}.v) AS s{x}" for x in used)
    else:  # only measures ONE ROW PER MATCH renders without a view (``fastpath.OneRowMeasures``)
        measures = SIMPLE_MEASURES + "".join(
            f", {x}.t AS t{x}, LAST({x}.v, 1) AS l{x}, FIRST({x}.t, 1) AS f{x}, CLASSIFIER({x}) AS c{x}"
            for x in used)
    skip = draw(st.sampled_from(SKIPS)).format(x=draw(st.sampled_from(used)))
    rpm = draw(st.sampled_from(ROWS_PER_MATCH))
    part = draw(st.sampled_from(["PARTITION BY k ", ""]))
    return f"{part}ORDER BY t MEASURES {measures} {rpm} {skip} PATTERN ({pattern}) DEFINE {defines}"


@st.composite
def streams(draw):
    n = draw(st.integers(0, 40))
    out = []
    t = 0
    for _ in range(n):
        t += draw(st.sampled_from([0, 1, 1, 1, 2, -1, -3]))
        row = {"k": draw(st.sampled_from(["x", "y"])), "t": t}
        v = draw(st.sampled_from([0, 1, 1, 2, 2, 3, 4, None, 2.0, "absent"]))
        if v != "absent":
            row["v"] = v
        if draw(st.booleans()):
            row["w"] = draw(st.sampled_from([None, 1, 3]))
        out.append(row)
    return out


def build(body, engine, bound, shortcuts=True):
    """The processor; ``shortcuts=False``: without the shortcuts that do not depend on the engine
    (ONE ROW PER MATCH simple measures, SELECT * output) — the reference."""
    try:
        proc = MatchRecognizeProcessor(parse_select(f"SELECT RSTREAM * FROM s MATCH_RECOGNIZE ({body})"),
                                       None, reorder_bound=bound, engine=engine)
    except BQLError:
        return None
    if not shortcuts:
        mr = proc.mr
        proc.builder = OutputBuilder([(m.alias, proc.spec.ctx.compile(m.expr)) for m in mr.measures],
                                     proc.builder.partition_names, mr.rows_per_match, mr.empty_matches,
                                     proc.spec.ctx)
        proc.star_only = False
        proc.star_outputs = None
    return proc


def step_view(res):
    return ([(o.data, o.ts, o.seq) for o in res.outputs],
            [(d.tuple.data, d.error, d.event_type) for d in res.dropped])


def run(proc, rows, restore_at=(), restore_engine=None, body=None, bound=None):
    steps = []
    for i, r in enumerate(rows):
        if i in restore_at:
            data = proc.snapshot()
            proc = build(body, restore_engine, bound)
            proc.restore(data)
        steps.append(step_view(proc.process(Tuple(dict(r), T0 + dt.timedelta(seconds=i), i + 1, "s"))))
    steps.append(step_view(proc.finish("s")))
    return steps


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clauses(), streams(), st.sampled_from([0, 1, 3, 1000]))
def test_automaton_equals_matcher(body, rows, bound):
    ref = build(body, "matcher", bound, shortcuts=False)
    assume(ref is not None)
    auto = build(body, "automaton", bound)
    assert run(auto, rows) == run(ref, rows)


@SETTINGS
@given(clauses(), streams(), st.sampled_from([0, 3, 1000]), st.data())
def test_snapshot_restore_continues_identically(body, rows, bound, data):
    ref = build(body, "matcher", bound, shortcuts=False)
    assume(ref is not None and rows)
    points = set(data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=3)))
    engines = data.draw(st.sampled_from([("automaton", "automaton"), ("matcher", "automaton"),
                                         ("automaton", "matcher")]))
    want = run(ref, rows)
    first = build(body, engines[0], bound)
    assert run(first, rows, points, engines[1], body, bound) == want


@pytest.mark.parametrize("body", [
    "ORDER BY t MEASURES count(*) AS n ONE ROW PER MATCH PATTERN (A B+ C) "
    "DEFINE B AS v < PREV(v), C AS v > PREV(v)",
    "PARTITION BY k ORDER BY t MEASURES CLASSIFIER() AS c ALL ROWS PER MATCH PATTERN (A+? B | C*) "
    "DEFINE A AS v = 1, B AS LAST(B.v) > 1",
])
def test_row_local_patterns_take_the_automaton(body):
    auto = build(body, None, 10)
    assert auto.engine_description().startswith("deterministic automaton (")
    assert " states built so far)" in auto.engine_description()
    assert build(body, "matcher", 10).engine_description() == "backtracking matcher: the matcher was asked for"


@pytest.mark.parametrize("body,why", [
    ("ORDER BY t MEASURES count(*) AS n PATTERN (A B) DEFINE B AS v > A.v", "reads other rows"),
    ("ORDER BY t MEASURES count(*) AS n PATTERN (A B+) DEFINE B AS v > FIRST(v)", "reads other rows"),
    ("ORDER BY t MEASURES count(*) AS n PATTERN (A B+) DEFINE B AS sum(B.v) > 3", "reads other rows"),
    ("ORDER BY t MEASURES count(*) AS n PATTERN (A B) DEFINE B AS v < NEXT(v)", "later row (NEXT)"),
    ("ORDER BY t MEASURES count(*) AS n PATTERN (^ A B $) DEFINE B AS v > 1", "anchors"),
    ("ORDER BY t MEASURES count(*) AS n PATTERN (A B) WITHIN 5 SECONDS DEFINE B AS v > 1", "WITHIN"),
])
def test_other_patterns_fall_back_to_the_matcher(body, why):
    desc = build(body, None, 10).engine_description()
    assert desc.startswith("backtracking matcher: ") and why in desc


@pytest.mark.parametrize("measures", [
    "MATCH_ROWTIME() AS rt, FIRST(t) AS f, count(*) AS n",  # the general rendering: reads the rows' ORDER BY keys
    "A.t AS a, LAST(B.t) AS b, C.t AS c, MATCH_NUMBER() AS mn",  # the lane's SELECT * shortcut
])
def test_long_streams_through_the_lane_equal_the_matcher(measures):
    """Thousands of rows, so the lane forgets rows (and their keys) many times between matches."""
    import random

    rng = random.Random(7)
    price = {"x": 100, "y": 100}
    rows = []
    for i in range(3000):
        k = rng.choice("xy")
        price[k] += rng.choice((-2, -1, -1, 0, 1, 1, 2))
        rows.append({"k": k, "t": i, "v": price[k]})
    body = (f"PARTITION BY k ORDER BY t MEASURES {measures} ONE ROW PER MATCH PATTERN (A B+ C) "
            "DEFINE B AS v < PREV(v), C AS v > PREV(v)")
    lane = build(body, "compiled", 10)
    assert "compiled lane" in lane.engine_description()
    want = run(build(body, "matcher", 10, shortcuts=False), rows)
    got = run(lane, rows)
    assert sum(len(s[0]) for s in got) > 300 and got == want
