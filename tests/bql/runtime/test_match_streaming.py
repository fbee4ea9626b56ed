"""Streaming behaviour: emission as soon as a match is decided, ORDER BY reordering within the bound
and late drops, finish() flush, WITHIN, snapshot/restore mid-match, and the performance guard."""
import datetime as dt
import sys

from match_util import T0, feed, mr

from sbpy.bql.runtime.processor import Tuple

ABC = "ORDER BY id MEASURES FIRST(id) AS s, LAST(id) AS e ONE ROW PER MATCH PATTERN (A B+ C) " \
      "DEFINE A AS v = 1, B AS v = 2, C AS v = 3"


def rows_of(vs):
    return [{"id": i, "v": v} for i, v in enumerate(vs, start=1)]


def test_match_emitted_when_the_deciding_row_arrives():
    steps = feed(mr(ABC, reorder_bound=0), rows_of([1, 2, 2, 3, 1]), per_step=True)
    assert steps == [[], [], [], [{"s": 1, "e": 4}], [], []]


def test_greedy_tail_waits_for_a_row_that_ends_it():
    steps = feed(mr("ORDER BY id MEASURES count(*) AS n ONE ROW PER MATCH PATTERN (A+) DEFINE A AS v = 1",
                    reorder_bound=0), rows_of([1, 1, 2, 1]), per_step=True)
    assert steps == [[], [], [{"n": 2}], [], [{"n": 1}]]


def test_next_in_measures_waits_for_the_following_row():
    steps = feed(mr("ORDER BY id MEASURES NEXT(v) AS nx ONE ROW PER MATCH PATTERN (A) DEFINE A AS v = 1",
                    reorder_bound=0), rows_of([1, 2]), per_step=True)
    assert steps == [[], [{"nx": 2}], []]


def test_out_of_order_rows_are_reordered_within_the_bound():
    rows = [{"id": 2, "v": 2}, {"id": 1, "v": 1}, {"id": 4, "v": 1}, {"id": 3, "v": 3}]
    assert feed(mr(ABC, reorder_bound=5), rows) == [{"s": 1, "e": 3}]


def test_rows_released_once_the_bound_has_passed():
    steps = feed(mr(ABC, reorder_bound=2), rows_of([1, 2, 3, 1, 1, 1]), per_step=True)
    assert steps[3] == [] and steps[4] == [{"s": 1, "e": 3}]  # id 5 arrives: ids <= 3 released


def test_late_rows_are_dropped_and_reported():
    p = mr(ABC, reorder_bound=1)
    p.process(Tuple({"id": 10, "v": 1}, T0, 1, "t"))
    res = p.process(Tuple({"id": 5, "v": 1}, T0, 2, "t"))
    assert res.outputs == [] and len(res.dropped) == 1
    assert "reorder bound" in res.dropped[0].error and res.dropped[0].event_type == "input"


def test_string_keys_are_taken_in_arrival_order():
    rows = [{"id": "b", "v": 1}, {"id": "a", "v": 2}, {"id": "c", "v": 3}]
    assert feed(mr(ABC), rows) == [{"s": "b", "e": "c"}]


def test_finish_releases_held_rows_and_closes_open_matches():
    p = mr("ORDER BY id MEASURES count(*) AS n ONE ROW PER MATCH PATTERN (A+) DEFINE A AS v = 1")
    for i in range(3):
        assert p.process(Tuple({"id": i, "v": 1}, T0, i, "t")).outputs == []
    assert [t.data for t in p.finish("t").outputs] == [{"n": 3}]


def test_within_abandons_candidates_that_span_too_long():
    q = "ORDER BY id MEASURES FIRST(id) AS s ONE ROW PER MATCH PATTERN (A B* C) WITHIN 2 SECONDS " \
        "DEFINE A AS v = 1, B AS v = 0, C AS v = 3"
    rows = [{"id": 0, "v": 1}, {"id": 1, "v": 0}, {"id": 2, "v": 1}, {"id": 3, "v": 0}, {"id": 4, "v": 3}]
    assert feed(mr(q, reorder_bound=0), rows) == [{"s": 2}]
    equal = [{"id": 0, "v": 1}, {"id": 2, "v": 3}]
    assert feed(mr(q, reorder_bound=0), equal) == [{"s": 0}]


def test_within_on_timestamp_keys():
    q = "ORDER BY ts MEASURES count(*) AS n ONE ROW PER MATCH PATTERN (A B) WITHIN 1500 MILLISECONDS " \
        "DEFINE A AS v = 1, B AS v = 2"
    p = mr(q, reorder_bound=0)
    out = []
    for i, (sec, v) in enumerate([(0, 1), (2, 2), (3, 1), (4, 2)]):
        ts = T0 + dt.timedelta(seconds=sec)
        out += [t.data for t in p.process(Tuple({"ts": ts, "v": v}, ts, i, "t")).outputs]
    assert out == [{"n": 2}]


def test_snapshot_restore_mid_match_gives_identical_output():
    q = "PARTITION BY g ORDER BY id MEASURES CLASSIFIER() AS c, MATCH_NUMBER() AS m, LAST(A.v, 1) AS l " \
        "ALL ROWS PER MATCH PATTERN (A+ B) DEFINE A AS v >= LAST(A.v, 1) OR LAST(A.v, 1) IS NULL, B AS v < 0"
    rows = [{"g": i % 2, "id": i, "v": v} for i, v in enumerate([1, 1, 2, 3, 3, 4, -1, 5, 6, -1, 2, -2])]
    ref = feed(mr(q, reorder_bound=1), rows)
    assert len(ref) > 0
    for cut in range(len(rows)):
        p = mr(q, reorder_bound=1)
        first = feed(p, rows[:cut], finish=False)
        blob = p.snapshot()
        q2 = mr(q, reorder_bound=1)
        q2.restore(blob)
        rest = []
        for i, r in enumerate(rows[cut:], start=cut):
            rest += [t.data for t in q2.process(Tuple(dict(r), T0, i + 1, "t")).outputs]
        rest += [t.data for t in q2.finish("t").outputs]
        assert first + rest == ref, cut


def test_performance_guard_exponential_pattern_is_linear():
    """The no-match guard must not back-track exponentially: its work grows linearly with the rows.
    The work is counted, not timed (a time ratio failed on a loaded machine): the Python function calls
    the processor makes, which are the same in every run (bench/b5_match.py reports the 100k time)."""
    def cost(n: int) -> int:
        p = mr("ORDER BY id MEASURES count(*) AS n PATTERN (A+ B+ C+ E) "
               "DEFINE A AS v > 0, B AS v > 0, C AS v > 0, E AS v < 0")
        rows = [Tuple({"id": i, "v": 1}, T0, i, "t") for i in range(n)]
        calls = 0

        def count(_frame, event, _arg):
            nonlocal calls
            calls += event == "call"

        out = []
        sys.setprofile(count)
        try:
            for row in rows:
                out += p.process(row).outputs
            out += p.finish("t").outputs
        finally:
            sys.setprofile(None)
        assert out == []
        return calls

    small, large = cost(5_000), cost(20_000)
    print(f"\nguard A+ B+ C+ E: 5k rows {small:,} calls, 20k rows {large:,} calls (x{large / small:.2f})")
    assert large / small < 5  # linear: ~4x; quadratic would be ~16x
