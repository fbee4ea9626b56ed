"""The ORDER BY reorder buffer: DESC keys after the time attribute, the SETTINGS clause (delay, ahead,
row limit, partition or global watermark), WITHIN ending attempts when the watermark passes them, and
snapshots with the global clock — golden cases step by step."""
import pytest
from match_time_util import dropped, feed_steps, outputs, processor
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.parser import parse_one

ENGINES = ["matcher", "automaton"]
ONE = "MEASURES FIRST(A.t) AS s, LAST(C.t) AS e PATTERN (A B+ C) DEFINE A AS v = 1, B AS v = 2, C AS v = 3"
LATE = "MATCH_RECOGNIZE: row arrived later than the ORDER BY reorder bound ({}) allows and was dropped"


def per_step(steps):
    return [[o[0] for o in step[0]] for step in steps]


# ---------------------------------------------------------------- ORDER BY t, k DESC


@pytest.mark.parametrize("engine", ENGINES)
def test_a_desc_key_orders_rows_of_equal_time(engine):
    rows = [{"t": 1, "w": 1, "v": 1}, {"t": 2, "w": 1, "v": 3}, {"t": 2, "w": 5, "v": 2}, {"t": 3, "w": 0, "v": 0}]
    asc = processor(f"ORDER BY t, w {ONE.replace('FIRST(A.t) AS s', 'FIRST(A.w) AS s')}", engine=engine)
    desc = processor(f"ORDER BY t, w DESC {ONE.replace('FIRST(A.t) AS s', 'FIRST(A.w) AS s')}", engine=engine)
    assert outputs(feed_steps(asc, rows)) == []  # t=2: w=1 (v=3) before w=5 (v=2): no A B+ C
    assert outputs(feed_steps(desc, rows)) == [{"s": 1, "e": 2}]


@pytest.mark.parametrize("engine", ENGINES)
def test_ties_of_every_key_keep_their_arrival_order(engine):
    rows = [{"t": 1, "w": 0, "v": 1}, {"t": 1, "w": 0, "v": 2}, {"t": 1, "w": 0, "v": 3}]
    p = processor("ORDER BY t, w DESC MEASURES count(*) AS n PATTERN (A B C) "
                  "DEFINE A AS v = 1, B AS v = 2, C AS v = 3", engine=engine)
    assert outputs(feed_steps(p, rows)) == [{"n": 3}]


def test_desc_keys_order_nulls_and_mixed_types_by_the_total_order():
    rows = [{"t": 1, "w": None, "v": 3}, {"t": 1, "w": "x", "v": 2}, {"t": 1, "w": 7, "v": 1}]
    p = processor("ORDER BY t, w DESC MEASURES count(*) AS n PATTERN (A B C) "
                  "DEFINE A AS v = 1, B AS v = 2, C AS v = 3")
    # ascending total order: numbers, then other types by name, NULL last; DESC reverses it
    assert outputs(feed_steps(p, rows)) == []
    p = processor("ORDER BY t, w DESC MEASURES count(*) AS n PATTERN (A B C) "
                  "DEFINE A AS v = 3, B AS v = 2, C AS v = 1")
    assert outputs(feed_steps(p, rows)) == [{"n": 3}]


def test_the_first_key_must_be_ascending():
    with pytest.raises(BQLAnalysisError, match="time attribute and must be ascending"):
        processor(f"ORDER BY t DESC, w {ONE}")


# ---------------------------------------------------------------- SETTINGS


def test_settings_parse_unparse_and_case_forms():
    text = ("SELECT RSTREAM * FROM s MATCH_RECOGNIZE (ORDER BY t MEASURES count(*) AS n PATTERN (A) "
            'DEFINE A AS v = 1 SETTINGS TimeOrderRecoverDelay = 2, time_order_recover_ahead = 500 MILLISECONDS, '
            'TIME_ORDER_RECOVER_ROW_LIMIT = 3, watermark = "GLOBAL")')
    stmt = parse_one(text)
    assert parse_one(unparse(stmt)) == stmt
    p = processor("ORDER BY t MEASURES count(*) AS n PATTERN (A) DEFINE A AS v = 1 SETTINGS "
                  'TimeOrderRecoverDelay = 2, time_order_recover_ahead = 500 MILLISECONDS, '
                  'TIME_ORDER_RECOVER_ROW_LIMIT = 3, watermark = "GLOBAL"')
    order = p.time_order
    assert (order.delay, order.ahead, order.row_limit, order.scope) == (2, 0.5, 3, "global")


@pytest.mark.parametrize("settings,message", [
    ("foo = 1", "unknown MATCH_RECOGNIZE setting 'foo'"),
    ("time_order_recover_delay = -1", None),  # a syntax error: values are unsigned
    ('time_order_recover_delay = "1"', "must be a non-negative number"),
    ("time_order_recover_ahead = 0", "must be a positive number"),
    ("time_order_recover_row_limit = 1.5", "must be a positive integer"),
    ("watermark = 1", 'must be "partition" or "global"'),
    ("watermark = \"global\", watermark = \"partition\"", "given more than once"),
])
def test_bad_settings_are_refused(settings, message):
    from sbpy.bql.errors import BQLError

    with pytest.raises(BQLError, match=message):
        processor(f"ORDER BY t MEASURES count(*) AS n PATTERN (A) DEFINE A AS v = 1 SETTINGS {settings}")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_delay_setting_wins_over_the_default(engine):
    body = f"ORDER BY t {ONE} SETTINGS time_order_recover_delay = 0"
    steps = feed_steps(processor(body, engine=engine), [{"t": 1, "v": 1}, {"t": 2, "v": 2}, {"t": 3, "v": 3}])
    assert per_step(steps) == [[], [], [{"s": 1, "e": 3}], []]
    steps = feed_steps(processor(f"ORDER BY t {ONE}", engine=engine),
                       [{"t": 1, "v": 1}, {"t": 2, "v": 2}, {"t": 3, "v": 3}])
    assert per_step(steps) == [[], [], [], [{"s": 1, "e": 3}]]  # the default delay (10) holds them


@pytest.mark.parametrize("engine", ENGINES)
def test_a_row_too_far_ahead_is_dropped_and_does_not_move_time(engine):
    body = f"ORDER BY t {ONE} SETTINGS time_order_recover_delay = 1, time_order_recover_ahead = 5"
    rows = [{"t": 1, "v": 1}, {"t": 100, "v": 9}, {"t": 2, "v": 2}, {"t": 3, "v": 3}, {"t": 4, "v": 0}]
    steps = feed_steps(processor(body, engine=engine), rows)
    ahead = ("MATCH_RECOGNIZE: row is further ahead of the stream's time than time_order_recover_ahead (5) "
             "allows and was dropped")
    assert dropped(steps) == [({"t": 100, "v": 9}, ahead, "input")]
    assert per_step(steps) == [[], [], [], [], [{"s": 1, "e": 3}], []]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_row_limit_releases_the_oldest_row_and_makes_older_rows_late(engine):
    body = f"ORDER BY t {ONE} SETTINGS time_order_recover_row_limit = 2"
    rows = [{"t": 1, "v": 1}, {"t": 3, "v": 2}, {"t": 4, "v": 3}, {"t": 2, "v": 2}, {"t": 5, "v": 0}]
    steps = feed_steps(processor(body, engine=engine), rows)
    # t=4 arrives: three held, t=1 released; t=5: t=3 released (the floor is 3); t=2 came before that
    assert dropped(steps) == []
    assert outputs(steps) == [{"s": 1, "e": 4}]
    late = feed_steps(processor(body, engine=engine), rows[:3] + [{"t": 5, "v": 0}, {"t": 2, "v": 2}])
    assert dropped(late) == [({"t": 2, "v": 2}, LATE.format(10), "input")]


# ---------------------------------------------------------------- the global watermark

TWO = ("PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS s, LAST(C.t) AS e ONE ROW PER MATCH "
       "PATTERN (A B+ C) DEFINE A AS v = 1, B AS v = 2, C AS v = 3")
QUIET = [{"k": "x", "t": 1, "v": 1}, {"k": "x", "t": 2, "v": 2}, {"k": "x", "t": 3, "v": 3},
         {"k": "y", "t": 10, "v": 0}, {"k": "y", "t": 20, "v": 0}]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_quiet_partition_waits_for_its_own_rows_by_default(engine):
    steps = feed_steps(processor(f"{TWO} SETTINGS time_order_recover_delay = 5", engine=engine), QUIET)
    assert per_step(steps) == [[], [], [], [], [], [{"k": "x", "s": 1, "e": 3}]]


@pytest.mark.parametrize("engine", ENGINES)
def test_the_global_watermark_emits_a_quiet_partitions_match(engine):
    body = f'{TWO} SETTINGS time_order_recover_delay = 5, watermark = "global"'
    steps = feed_steps(processor(body, engine=engine), QUIET)
    # y's t=10 moves the stream's time to 10: x's rows up to 5 are released and its match decided
    assert per_step(steps) == [[], [], [], [{"k": "x", "s": 1, "e": 3}], [], []]
    assert steps[3][0][0][2] == 4  # stamped with the seq of the row that moved time


@pytest.mark.parametrize("engine", ENGINES)
def test_the_global_watermark_makes_a_lagging_partitions_rows_late(engine):
    body = f'{TWO} SETTINGS time_order_recover_delay = 5, watermark = "global"'
    rows = [{"k": "y", "t": 20, "v": 0}, {"k": "x", "t": 14, "v": 1}, {"k": "x", "t": 15, "v": 1}]
    steps = feed_steps(processor(body, engine=engine), rows)
    assert dropped(steps) == [({"k": "x", "t": 14, "v": 1}, LATE.format(5), "input")]


@pytest.mark.parametrize("engine", ENGINES)
def test_snapshot_restore_keeps_the_global_clock(engine):
    body = f'{TWO} SETTINGS time_order_recover_delay = 5, watermark = "global"'
    want = feed_steps(processor(body, engine=engine), QUIET)
    for cut in range(len(QUIET)):
        p = processor(body, engine=engine)
        first = feed_steps(p, QUIET[:cut], finish=False)
        q = processor(body, engine=engine)
        q.restore(p.snapshot())
        rest = feed_steps(q, QUIET[cut:])
        assert per_step(first + rest) == per_step(want), cut


def test_the_keyed_spark_split_declines_a_global_watermark():
    from sbpy.bql.spark.keyed_plan import partition_exprs
    from sbpy.bql.spark.operator import StageSpec

    def spec(tail):
        return StageSpec("q", f"SELECT RSTREAM * FROM s MATCH_RECOGNIZE ({TWO}{tail})", ("s",))
    assert partition_exprs(spec("")) is not None
    assert partition_exprs(spec(" SETTINGS time_order_recover_delay = 3")) is not None
    assert partition_exprs(spec(' SETTINGS watermark = "global"')) is None


# ---------------------------------------------------------------- WITHIN and the watermark


def test_within_ends_a_partial_match_when_the_watermark_passes_it():
    """A B* with WITHIN 5: the greedy B* of x's match waits for a row that ends it; with the global
    watermark, y moving time past t=1+5 ends it and the match is emitted without any row of x."""
    body = ('PARTITION BY k ORDER BY t MEASURES FIRST(A.t) AS s, count(B.*) AS nb PATTERN (A B*) '
            'WITHIN 5 SECONDS DEFINE A AS v = 1, B AS v = 2 SETTINGS time_order_recover_delay = 0, '
            'watermark = "global"')
    rows = [{"k": "x", "t": 1, "v": 1}, {"k": "x", "t": 2, "v": 2}, {"k": "y", "t": 6, "v": 0},
            {"k": "y", "t": 7, "v": 0}]
    steps = feed_steps(processor(body), rows)
    assert per_step(steps) == [[], [], [], [{"k": "x", "s": 1, "nb": 1}], []]
