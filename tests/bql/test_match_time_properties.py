"""Property tests of MATCH_RECOGNIZE time handling against references:

- the automaton against the matcher (step by step: outputs, timestamps, seqs, dropped tuples) on
  clauses with MATCH_ROWTIME(), count(X.*), a DESC second ORDER BY key and random SETTINGS (delay,
  ahead, row limit, partition or global watermark), with snapshot/restore across engines;
- WITHIN ending attempts at the watermark against ending them at the next row (the old path): each
  partition's rows the same and in the same order, never emitted later;
- the global watermark against a model: the rows it drops are those an independent simulation of
  ``max time seen - delay`` (and ``ahead``) drops, and each partition's outputs are those of the
  per-partition processor fed that partition's surviving rows in time order (and, where neither
  drops a row, no partition's output comes later than with the per-partition watermark);
- a DESC second key against presorting the rows by ``(t, -w)`` and matching on ``t`` alone.
"""
import datetime as dt

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from match_time_util import T0, feed_steps, outputs, processor, step_view
from sbpy.bql.errors import BQLError
from sbpy.bql.runtime.processor import Tuple

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PATTERNS = ["A B+ C", "A (B | C)* C", "(A | B)+ C?", "A B* C+", "PERMUTE(A, B) C*", "A+? B C", "A {- B -} C"]
CONDITIONS = ["v = 1", "v = 2", "v >= 2", "v < 3", "v > PREV(v)", "v = PREV(v)", "w IS NULL", "true"]
ROWS_PER_MATCH = ["ONE ROW PER MATCH", "ALL ROWS PER MATCH", "ALL ROWS PER MATCH WITH UNMATCHED ROWS"]


@st.composite
def time_clauses(draw, within=False):
    pattern = draw(st.sampled_from(PATTERNS))
    rpm = draw(st.sampled_from(ROWS_PER_MATCH))
    if "{-" in pattern and "UNMATCHED" in rpm:
        rpm = "ALL ROWS PER MATCH"
    defines = ", ".join(f"{x} AS {draw(st.sampled_from(CONDITIONS))}" for x in "ABC" if draw(st.booleans()))
    order = draw(st.sampled_from(["t", "t, w DESC", "t, w", "t, v DESC, w"]))
    part = draw(st.sampled_from(["PARTITION BY k ", ""]))
    measures = ("MATCH_ROWTIME() AS rt, count(A.*) AS na, count(B.*) AS nb, FINAL count(C.*) AS nc, "
                "MATCH_NUMBER() AS mn, CLASSIFIER() AS cls")
    tail = f" WITHIN {draw(st.sampled_from([0, 1, 2, 5]))} SECONDS" if within else ""
    opts = []
    if draw(st.booleans()):
        opts.append(f"time_order_recover_delay = {draw(st.sampled_from([0, 1, 3]))}")
    if draw(st.booleans()):
        opts.append(f"time_order_recover_ahead = {draw(st.sampled_from([1, 4]))}")
    if draw(st.booleans()):
        opts.append(f"time_order_recover_row_limit = {draw(st.sampled_from([1, 2, 5]))}")
    if draw(st.booleans()):
        opts.append(f'watermark = "{draw(st.sampled_from(["partition", "global"]))}"')
    setting = (" SETTINGS " + ", ".join(opts)) if opts else ""
    return (f"{part}ORDER BY {order} MEASURES {measures} {rpm} PATTERN ({pattern}){tail} "
            f"DEFINE {defines or 'A AS true'}{setting}")


@st.composite
def time_rows(draw, max_size=30, nulls=True):
    out, t = [], 0
    for _ in range(draw(st.integers(0, max_size))):
        t += draw(st.sampled_from([0, 1, 1, 2, 3, -1, -2, -5, 7]))
        w = draw(st.sampled_from([0, 1, 2, None] if nulls else [0, 1, 2]))
        out.append({"k": draw(st.sampled_from(["x", "y", "z"])), "t": t, "w": w,
                    "v": draw(st.sampled_from([1, 2, 2, 3]))})
    return out


def build(body, engine):
    try:
        return processor(body, engine=engine)
    except BQLError:
        return None


def run_with_restores(body, engine, rows, cuts, restore_engine):
    proc = build(body, engine)
    steps = []
    for i, r in enumerate(rows):
        if i in cuts:
            data = proc.snapshot()
            proc = build(body, restore_engine)
            proc.restore(data)
        steps.append(step_view(proc.process(Tuple(dict(r), T0 + dt.timedelta(seconds=i), i + 1, "s"))))
    steps.append(step_view(proc.finish("s")))
    return [(out, [(d, e, k) for d, e, k in drops]) for out, drops in steps]


@SETTINGS
@given(time_clauses(), time_rows(), st.data())
def test_automaton_equals_matcher_on_the_time_forms(body, rows, data):
    ref = build(body, "matcher")
    assume(ref is not None)
    want = feed_steps(ref, rows)
    assert feed_steps(build(body, "automaton"), rows) == want
    if rows:
        cuts = set(data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=2)))
        engines = data.draw(st.sampled_from([("automaton", "matcher"), ("matcher", "automaton")]))
        got = run_with_restores(body, engines[0], rows, cuts, engines[1])
        assert got == [(out, list(drops)) for out, drops in want]


@SETTINGS
@given(time_clauses(within=True), time_rows())
def test_within_at_the_watermark_equals_within_at_the_next_row(body, rows):
    eager = build(body, "matcher")
    assume(eager is not None)
    lazy = build(body, "matcher")
    lazy.expire_by_time = False  # the old path: an attempt ends when a later row of its partition arrives
    a, b = feed_steps(eager, rows), feed_steps(lazy, rows)
    assert [s[1] for s in a] == [s[1] for s in b]

    def group(o):  # partitions may interleave differently; each one's rows keep their order
        return o[0].get("k") if body.startswith("PARTITION BY") else None
    done_a: dict = {}
    done_b: dict = {}
    for sa, sb in zip(a, b):
        for o in sa[0]:
            done_a.setdefault(group(o), []).append((o[0], o[1]))
        for o in sb[0]:
            done_b.setdefault(group(o), []).append((o[0], o[1]))
        # never later: after every step each partition has emitted at least the lazy run's rows
        assert all(done_a.get(g, [])[:len(rows_b)] == rows_b for g, rows_b in done_b.items())
    assert done_a == done_b


def _model_drops(rows, delay, ahead):
    """Indices of the rows the global watermark drops: late (below the largest t seen - delay) or
    more than ``ahead`` beyond the largest t seen."""
    top, out = None, set()
    for i, r in enumerate(rows):
        t = r["t"]
        if top is not None and (t < top - delay or (ahead is not None and t > top + ahead)):
            out.add(i)
            continue
        top = t if top is None else max(top, t)
    return out


def _by_partition(rows):
    out = {}
    for r in rows:
        out.setdefault(r["k"], []).append(r)
    return out


@SETTINGS
@given(st.sampled_from(PATTERNS), st.sampled_from(ROWS_PER_MATCH), time_rows(max_size=40),
       st.sampled_from([0, 1, 2, 4]), st.sampled_from([None, 2, 6]))
def test_global_watermark_against_a_model(pattern, rpm, rows, delay, ahead):
    if "{-" in pattern and "UNMATCHED" in rpm:
        rpm = "ALL ROWS PER MATCH"
    clause = (f"PARTITION BY k ORDER BY t MEASURES MATCH_ROWTIME() AS rt, count(B.*) AS nb, MATCH_NUMBER() AS mn "
              f"{rpm} PATTERN ({pattern}) DEFINE A AS v = 1, B AS v = 2, C AS v >= 2")
    opts = f'time_order_recover_delay = {delay}, watermark = "global"'
    if ahead is not None:
        opts += f", time_order_recover_ahead = {ahead}"
    steps = feed_steps(processor(f"{clause} SETTINGS {opts}"), rows)
    drops = _model_drops(rows, delay, ahead)
    assert [d[0] for s in steps for d in s[1]] == [rows[i] for i in sorted(drops)]
    kept = [r for i, r in enumerate(rows) if i not in drops]
    got = _by_partition(outputs(steps))
    for k, part_rows in _by_partition(kept).items():
        in_order = sorted(part_rows, key=lambda r: r["t"])  # stable: equal times keep their arrival order
        ref = outputs(feed_steps(processor(f"{clause} SETTINGS time_order_recover_delay = 0"), in_order))
        assert got.get(k, []) == ref, k
    if not drops and ahead is None:  # the per-partition watermark drops nothing either: never later than it
        local = feed_steps(processor(f"{clause} SETTINGS time_order_recover_delay = {delay}"), rows)
        assert sorted(map(repr, outputs(local))) == sorted(map(repr, outputs(steps)))
        done_global, done_local = {}, {}
        for sg, sl in zip(steps, local):
            for o in sg[0]:
                done_global[o[0]["k"]] = done_global.get(o[0]["k"], 0) + 1
            for o in sl[0]:
                done_local[o[0]["k"]] = done_local.get(o[0]["k"], 0) + 1
            assert all(done_global.get(k, 0) >= n for k, n in done_local.items())


@SETTINGS
@given(st.sampled_from(PATTERNS), time_rows(max_size=30, nulls=False))
def test_desc_second_key_equals_presorting(pattern, rows):
    measures = "MATCH_ROWTIME() AS rt, array_agg(w) AS ws, count(A.*) AS na"
    clause = "MEASURES {m} ALL ROWS PER MATCH PATTERN ({p}) DEFINE A AS v = 1, B AS v = 2, C AS v >= 2"
    body = clause.format(m=measures, p=pattern)
    desc = processor(f"ORDER BY t, w DESC {body} SETTINGS time_order_recover_delay = 1000")
    presorted = sorted(rows, key=lambda r: (r["t"], -r["w"]))
    ref = processor(f"ORDER BY t {body} SETTINGS time_order_recover_delay = 1000")
    assert outputs(feed_steps(desc, rows)) == outputs(feed_steps(ref, presorted))
