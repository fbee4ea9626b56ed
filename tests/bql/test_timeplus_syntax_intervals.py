"""Timeplus interval shorthands (5s, 1m, 2h, 1d, 1w, 500ms) and the time-zone argument of tumble / hop.

The long form (``n SECONDS`` / ``n MILLISECONDS``) is the reference: a query written with shorthands must
give exactly the rows of the same query written with the long form (property tests over random inputs).
"""
import datetime as dt

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sbpy.bql.ast import Interval
from sbpy.bql.ast.unparse import unparse
from sbpy.bql.errors import BQLSyntaxError
from sbpy.bql.parser import parse_one
from sbpy.bql.runtime.testing import run_query, run_query_detailed

T0 = 1580673600  # 2020-02-02T20:00:00Z
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _window_of(stmt):
    return stmt.from_items[0]


@pytest.mark.parametrize("text,value,unit", [
    ("5s", 5, "seconds"), ("1m", 60, "seconds"), ("2h", 7200, "seconds"), ("1d", 86400, "seconds"),
    ("1w", 604800, "seconds"), ("500ms", 500, "milliseconds"), ("0s", 0, "seconds"),
])
def test_shorthand_is_normalised_and_keeps_its_text(text, value, unit):
    stmt = parse_one(f"SELECT RSTREAM count(*) AS c FROM tumble(src, {text}) GROUP BY window_start")
    iv = _window_of(stmt).intervals[0]
    assert (iv.value, iv.unit, iv.shorthand) == (value, unit, text)
    assert type(iv.value) is int


def test_shorthand_everywhere_an_interval_stands():
    stmt = parse_one("SELECT RSTREAM count(*) AS c FROM hop(src, ts, 2s, 1m) GROUP BY window_start "
                     "EMIT AFTER WATERMARK WITH DELAY 3s")
    assert [iv.shorthand for iv in _window_of(stmt).intervals] == ["2s", "1m"]
    assert stmt.emit.delay == Interval(3, "seconds", "3s")
    periodic = parse_one("SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 250ms REPEAT")
    assert periodic.emit.period.seconds() == 0.25 and periodic.emit.repeat
    session = parse_one("SELECT RSTREAM count(*) AS c FROM session(src, ts, 5s, 1m) GROUP BY window_start")
    assert [iv.seconds() for iv in _window_of(session).intervals] == [5.0, 60.0]


def test_unparse_keeps_shorthands_and_zone():
    text = ('SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, ts, 1h, "Asia/Tokyo") '
            "GROUP BY window_start EMIT AFTER WATERMARK WITH DELAY 2s")
    stmt = parse_one(text)
    again = parse_one(unparse(stmt))
    assert again == stmt
    assert "1h" in unparse(stmt) and "Asia/Tokyo" in unparse(stmt)
    assert _window_of(stmt).time_zone == "Asia/Tokyo"


def test_a_plain_number_next_to_a_unit_word_is_not_a_shorthand_outside_intervals():
    # in an expression, `5s` is the number 5 followed by a stray identifier (no interval there)
    with pytest.raises(BQLSyntaxError) as info:
        parse_one("EVAL 5s")
    assert (info.value.span.line, info.value.span.column) == (1, 7)
    # a field called `s` after a number with a space is still an ordinary parse error, and `5 SECONDS` works
    assert _window_of(parse_one("SELECT RSTREAM count(*) AS c FROM tumble(src, 5 SECONDS) "
                                "GROUP BY window_start")).intervals[0].shorthand is None


def _error(query):
    with pytest.raises(BQLSyntaxError) as info:
        parse_one(query)
    err = info.value
    lines = err.message.split("\n")
    caret = lines[2].index("^") + 1
    return lines[3], err.span.line, err.span.column, caret


@pytest.mark.parametrize("query,reason,col", [
    ("SELECT RSTREAM count(*) AS c FROM tumble(src, ts, 5M) GROUP BY window_start",
     "unexpected identifier 'M' (an interval is n SECONDS, n MILLISECONDS or n followed by ms, s, m, h, d or w)",
     52),
    ("SELECT RSTREAM count(*) AS c FROM tumble(src, ts, 5y) GROUP BY window_start",
     "unexpected identifier 'y' (an interval is", 52),
    ('SELECT RSTREAM count(*) AS c FROM tumble(src, ts, 5s, "Mars/Base") GROUP BY window_start',
     "unknown time zone 'Mars/Base' in 'tumble'", 55),
    ('SELECT RSTREAM count(*) AS c FROM session(src, ts, 5s, "UTC") GROUP BY window_start',
     "'session' takes no time zone argument", 56),
    ("SELECT RSTREAM count(*) AS c FROM tumble(src, ts, 5s, 3) GROUP BY window_start",
     "the last argument of 'tumble' must be an interval or a time zone string such as 'UTC'", 55),
    ('SELECT RSTREAM count(*) AS c FROM hop(src, ts, 1s, "UTC", 5s) GROUP BY window_start',
     "'hop' expects an interval such as '5 SECONDS' here", 52),
    ("SELECT RSTREAM count(*) AS c FROM tumble(src, ts, 'UTC') GROUP BY window_start",
     "unexpected character ''' (strings are written in double quotes), expected an expression", 51),
])
def test_bad_forms_are_syntax_errors_with_a_caret(query, reason, col):
    got_reason, line, column, caret = _error(query)
    assert got_reason.startswith(reason)
    assert (line, column, caret) == (1, col, col)


def test_zero_shorthand_is_an_analyzer_error():
    from sbpy.bql.errors import BQLAnalysisError
    from sbpy.bql.runtime.testing import parse_select

    with pytest.raises(BQLAnalysisError, match="must be positive: 0s"):
        parse_select("SELECT RSTREAM count(*) AS c FROM tumble(src, ts, 0s) GROUP BY window_start")


# ---------------------------------------------------------------- runtime: shorthand == long form

def _seconds(text):
    return float(_long(text).split()[0]) * (0.001 if "MILLI" in _long(text) else 1)


def _long(text):
    n, unit = int(text.rstrip("mshdw")), text.lstrip("0123456789")
    if unit == "ms":
        return f"{n} MILLISECONDS"
    return f"{n * SECONDS[unit]} SECONDS"


QUERIES = [
    "SELECT RSTREAM window_start, window_end, count(*) AS c, sum(v) AS s FROM tumble(src, ts, {a}) "
    "GROUP BY window_start, window_end",
    "SELECT RSTREAM window_start, k, count(*) AS c FROM hop(src, ts, {a}, {b}) GROUP BY window_start, k",
    "SELECT RSTREAM window_start, window_end, k, count(*) AS c FROM session(src, ts, {a}, {b}) "
    "GROUP BY window_start, window_end, k",
    "SELECT RSTREAM window_end, count(*) AS c FROM tumble(src, ts, {a}) GROUP BY window_end "
    "EMIT AFTER WATERMARK WITH DELAY {b}",
    "SELECT RSTREAM window_start, count(*) AS c FROM tumble(src, ts, {a}) GROUP BY window_start EMIT ON UPDATE",
]
shorthand = st.builds(lambda n, u: f"{n}{u}", st.integers(1, 90), st.sampled_from(["ms", "s", "m"]))
events = st.lists(st.tuples(st.integers(0, 400), st.sampled_from("ab"), st.integers(-5, 5)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(QUERIES), shorthand, shorthand, events)
def test_shorthand_query_gives_the_long_form_rows(template, a, b, evs):
    a_s, b_s = sorted([a, b], key=_seconds)
    # a hop of 1ms over 90m puts each row in 5.4 million windows (and the query's rows in gigabytes):
    # the forms are what is compared, so hops keep to at most 2,000 windows a row
    assume("hop(" not in template or _seconds(b_s) / _seconds(a_s) <= 2000)
    rows = [{"ts": T0 + t / 4, "k": k, "v": v} for t, k, v in evs]
    short = run_query_detailed(template.format(a=a_s, b=b_s), {"src": rows})
    long = run_query_detailed(template.format(a=_long(a_s), b=_long(b_s)), {"src": rows})
    assert short.outputs == long.outputs
    assert [d.error for d in short.dropped] == [d.error for d in long.dropped]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["UTC", "Asia/Kolkata", "America/New_York"]), events)
def test_time_zone_is_accepted_and_windows_stay_utc_epoch_seconds(zone, evs):
    rows = [{"ts": T0 + t * 97, "k": k, "v": v} for t, k, v in evs]
    base = "SELECT RSTREAM window_start, window_end, count(*) AS c FROM {w} GROUP BY window_start, window_end"
    for w in ("tumble(src, ts, 1h{z})", "hop(src, ts, 30m, 1h{z})"):
        zoned = run_query(base.format(w=w.format(z=f', "{zone}"')), {"src": rows})
        plain = run_query(base.format(w=w.format(z="")), {"src": rows})
        assert zoned == plain
        assert all(type(r["window_start"]) is int for r in zoned)


def test_week_windows_start_on_monday_and_seven_days_on_the_epoch_grid():
    rows = [{"ts": T0 + d * 86400} for d in range(0, 21, 2)]
    weeks = run_query("SELECT RSTREAM window_start, window_end, count(*) AS c FROM tumble(src, ts, 1w) "
                      "GROUP BY window_start, window_end", {"src": rows})
    days7 = run_query("SELECT RSTREAM window_start, window_end, count(*) AS c FROM tumble(src, ts, 7d) "
                      "GROUP BY window_start, window_end", {"src": rows})
    utc = dt.timezone.utc
    assert {dt.datetime.fromtimestamp(r["window_start"], utc).weekday() for r in weeks} == {0}  # Monday
    assert {dt.datetime.fromtimestamp(r["window_start"], utc).weekday() for r in days7} == {3}  # Thursday
    for out in (weeks, days7):
        assert all(r["window_end"] - r["window_start"] == 7 * 86400 for r in out)
        assert sum(r["c"] for r in out) == len(rows)
        for r in out:  # every event counted in the window that holds it
            inside = [x for x in rows if r["window_start"] <= x["ts"] < r["window_end"]]
            assert r["c"] == len(inside)
