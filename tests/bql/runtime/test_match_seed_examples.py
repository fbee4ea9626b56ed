"""The worked examples of the seeds: the YDB/YQL buttons example (PARTITION BY device_id, zone_id) and
its MEASURES example, Flink's ticker examples, and the Oracle ACME ticker example of the Flink FLIP."""
from match_util import feed, mr, run


def test_yql_buttons_partitioned_by_device_and_zone():
    q = ("PARTITION BY device_id, zone_id ORDER BY ts MEASURES LAST(B1.ts) AS b1, LAST(B3.ts) AS b3 "
         "ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW PATTERN (B1 B2+ B3) "
         "DEFINE B1 AS B1.button = 1, B2 AS B2.button = 2, B3 AS B3.button = 3")
    rows = [
        {"ts": 1700000000, "button": 1, "device_id": 1, "zone_id": 24},
        {"ts": 1700000001, "button": 1, "device_id": 2, "zone_id": 12},
        {"ts": 1700000002, "button": 2, "device_id": 1, "zone_id": 24},
        {"ts": 1700000003, "button": 2, "device_id": 1, "zone_id": 24},
        {"ts": 1700000004, "button": 3, "device_id": 2, "zone_id": 12},  # no B2 in this partition
        {"ts": 1700000005, "button": 3, "device_id": 1, "zone_id": 24},
        {"ts": 1700000006, "button": 1, "device_id": 1, "zone_id": 25},
        {"ts": 1700000007, "button": 2, "device_id": 1, "zone_id": 25},
        {"ts": 1700000008, "button": 3, "device_id": 1, "zone_id": 25},
    ]
    out = feed(mr(q, stream="input_stream"), rows, stream="input_stream")
    assert out == [
        {"device_id": 1, "zone_id": 24, "b1": 1700000000, "b3": 1700000005},
        {"device_id": 1, "zone_id": 25, "b1": 1700000006, "b3": 1700000008},
    ]


def test_yql_measures_example_aggregate_over_one_variable():
    q = ("ORDER BY ts MEASURES array_agg(B1.zone_id * 10 + B1.device_id) AS ids, "
         "LAST(B3.ts) - FIRST(B1.ts) AS time_diff, 42 AS meaning_of_life "
         "PATTERN (B1+ B2 B3) DEFINE B1 AS B1.button = 1, B2 AS B2.button = 2, B3 AS B3.button = 3")
    rows = [
        {"ts": 100, "button": 1, "device_id": 3, "zone_id": 0},
        {"ts": 200, "button": 1, "device_id": 3, "zone_id": 1},
        {"ts": 300, "button": 2, "device_id": 2, "zone_id": 0},
        {"ts": 400, "button": 3, "device_id": 1, "zone_id": 1},
    ]
    assert run(q, rows) == [{"ids": [3, 13], "time_diff": 300, "meaning_of_life": 42}]


def test_flip_oracle_acme_ticker():
    prices = [12, 17, 19, 21, 25, 12, 15, 20, 24, 25, 19]
    rows = [{"symbol": "ACME", "tstamp": d, "price": p} for d, p in enumerate(prices, start=1)]
    q = ("PARTITION BY symbol ORDER BY tstamp "
         "MEASURES STRT.tstamp AS start_tstamp, LAST(DOWN.tstamp) AS bottom_tstamp, LAST(UP.tstamp) AS end_tstamp "
         "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST UP PATTERN (STRT DOWN+ UP+) "
         "DEFINE DOWN AS DOWN.price < PREV(DOWN.price), UP AS UP.price > PREV(UP.price)")
    assert feed(mr(q, stream="Ticker"), rows, stream="Ticker") == [
        {"symbol": "ACME", "start_tstamp": 5, "bottom_tstamp": 6, "end_tstamp": 10}]


FLINK_T0 = 1301652000  # 01-Apr-11 10:00:00 UTC


def _ticker(prices):
    return [{"symbol": "ACME", "rowtime": FLINK_T0 + i, "price": p, "tax": 1} for i, p in enumerate(prices)]


def test_flink_intro_price_down_up():
    q = ("PARTITION BY symbol ORDER BY rowtime MEASURES START_ROW.rowtime AS start_tstamp, "
         "LAST(PRICE_DOWN.rowtime) AS bottom_tstamp, LAST(PRICE_UP.rowtime) AS end_tstamp "
         "ONE ROW PER MATCH AFTER MATCH SKIP TO LAST PRICE_UP PATTERN (START_ROW PRICE_DOWN+ PRICE_UP) "
         "DEFINE PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL AND PRICE_DOWN.price < START_ROW.price) "
         "OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1), PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)")
    rows = _ticker([12, 17, 19, 21, 25, 18, 15, 14, 24, 25, 19])
    assert feed(mr(q, stream="Ticker"), rows, stream="Ticker") == [
        {"symbol": "ACME", "start_tstamp": FLINK_T0 + 4, "bottom_tstamp": FLINK_T0 + 7, "end_tstamp": FLINK_T0 + 8}]


def test_flink_aggregation_avg_below_threshold():
    q = ("PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(A.rowtime) AS start_tstamp, "
         "LAST(A.rowtime) AS end_tstamp, avg(A.price) AS avgPrice ONE ROW PER MATCH "
         "AFTER MATCH SKIP PAST LAST ROW PATTERN (A+ B) DEFINE A AS avg(A.price) < 15")
    rows = _ticker([12, 17, 13, 16, 25, 2, 4, 10, 15, 25, 25, 30])
    assert feed(mr(q, stream="Ticker"), rows, stream="Ticker") == [
        {"symbol": "ACME", "start_tstamp": FLINK_T0, "end_tstamp": FLINK_T0 + 3, "avgPrice": 14.5},
        {"symbol": "ACME", "start_tstamp": FLINK_T0 + 5, "end_tstamp": FLINK_T0 + 10, "avgPrice": 13.5},
    ]


def test_flink_output_mode_example():
    q = ("PARTITION BY symbol ORDER BY rowtime MEASURES FIRST(A.price) AS startPrice, LAST(A.price) AS topPrice, "
         "B.price AS lastPrice ONE ROW PER MATCH PATTERN (A+ B) "
         "DEFINE A AS LAST(A.price, 1) IS NULL OR A.price > LAST(A.price, 1), B AS B.price < LAST(A.price)")
    rows = [{"symbol": "XYZ", "tax": 1, "price": p, "rowtime": 1537178402 + i} for i, p in enumerate([10, 12, 13, 11])]
    assert feed(mr(q, stream="Ticker"), rows, stream="Ticker") == [
        {"symbol": "XYZ", "startPrice": 10, "topPrice": 13, "lastPrice": 11}]


def test_flink_within_price_drop_of_10_in_one_hour():
    """Flink's WITHIN example: the 11 drop from 10:00 (20) to 11:40 (9) spans more than an hour and is
    not a match; the 14 drop from 12:00 (15) to 13:00 (1) is (equal to the bound is kept)."""
    q = ("PARTITION BY symbol ORDER BY rowtime MEASURES C.rowtime AS dropTime, A.price - C.price AS dropDiff "
         "ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW PATTERN (A B* C) WITHIN 3600 SECONDS "
         "DEFINE B AS B.price > A.price - 10, C AS C.price < A.price - 10")
    prices = [20, 17, 18, 11, 14, 9, 15, 14, 24, 1, 19]
    t10 = FLINK_T0  # 01-Apr-11 10:00:00, rows every 20 minutes
    rows = [{"symbol": "ACME", "rowtime": t10 + 1200 * i, "price": p, "tax": 1} for i, p in enumerate(prices)]
    assert feed(mr(q, stream="Ticker"), rows, stream="Ticker") == [
        {"symbol": "ACME", "dropTime": t10 + 3 * 3600, "dropDiff": 14}]
