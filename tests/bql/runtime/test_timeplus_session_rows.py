"""The fixed step's session rows (``timeplus/fixed_step.py``'s ``_join_session``, ``column_steps``'
``session_key``): an untagged session row computes its key inline and joins or opens its key's session
without the general ``_assign_session``. Checked against the reference row panes (the general step,
``SBPY_TIMEPLUS_PANES=rows``), tuple for tuple, dropped tuples included."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sbpy.bql.runtime.timeplus.pane_columns import LAYOUT_ENV
from timeplus_util import T0, Feeder, build


def _run(query, rows, monkeypatch, layout):
    monkeypatch.setenv(LAYOUT_ENV, layout)
    f = Feeder(query)
    out = [[(repr(o.data), o.ts, o.seq) for o in f.step(**row).outputs] for row in rows]
    out.append(f.finish())
    return repr(out), [(d.tuple.seq, d.error, d.event_type) for d in f.dropped], f.proc


def _same_as_rows(query, rows, monkeypatch):
    ref = _run(query, rows, monkeypatch, "rows")
    got = _run(query, rows, monkeypatch, "")
    assert got[2].session_rows and not ref[2].fixed_step
    assert got[:2] == ref[:2]
    return got


def _rows(n=200):
    """Bursts per key with gaps of several lengths and dense runs longer than a session's maximum, rows
    out of order (a little: within their session under a delay; a lot: late), a missing key, a key of
    another type, and values that make some groups fail."""
    out, t = [], T0
    for i in range(n):
        t += 0.15 if i % 60 < 30 else (0.3, 0.4, 2.5, 0.1, 5.0)[i % 5] if i % 7 else 0.9
        back = 3 if i % 11 == 10 else 0.5 if i % 4 == 3 else 0
        row = {"k": "abc"[i % 3] if i % 13 else 2, "v": (i * 7) % 5, "w": "x" if i % 29 == 5 else i,
               "ts": t - back, "m": {"x": i % 2} if i % 5 else "m"}
        if i % 19 == 18:
            del row["k"]
        out.append(row)
    return out


@pytest.mark.parametrize("from_", [
    "session(src, ts, 2 SECONDS)",
    "session(src, ts, 1 SECONDS, 3 SECONDS)",  # sessions cut at their maximum length
    "session(src, 2 SECONDS)",  # the tuple's own time
    "session(src, ts, 500 MILLISECONDS)",  # float window bounds
])
@pytest.mark.parametrize("tail", [
    "GROUP BY k, window_start",
    "GROUP BY window_end, k",
    "WHERE v != 2 GROUP BY k, window_start, window_end",
    "GROUP BY k, window_start EMIT AFTER WATERMARK WITH DELAY 2 SECONDS",
    "GROUP BY m.x, window_start",  # a key that is no plain field: its closure
    "GROUP BY k, v, window_start",
])
def test_session_rows_give_the_reference_rows(monkeypatch, from_, tail):
    query = (f"SELECT RSTREAM count(*) AS n, sum(v) AS s, max(w + 1) AS m, window_start, window_end "
             f"FROM {from_} {tail}")
    out, dropped, _ = _same_as_rows(query, _rows(), monkeypatch)
    assert any("late tuple" in d[1] for d in dropped) and "window_start" in out


def test_a_global_session_has_the_empty_key(monkeypatch):
    query = ("SELECT RSTREAM count(*) AS n, window_start FROM session(src, ts, 1 SECONDS) "
             "GROUP BY window_start")
    _, _, proc = _same_as_rows(query, _rows(60), monkeypatch)
    assert proc.sessions.newest and set(proc.sessions.newest) == {()}


def test_key_and_where_errors_drop_only_their_row(monkeypatch):
    query = ("SELECT RSTREAM count(*) AS n, window_start FROM session(src, ts, 1 SECONDS) "
             "WHERE v + 1 > 0 GROUP BY m.x, window_start")
    rows = [{"m": m, "v": v, "ts": T0 + t} for m, v, t in
            [({"x": 1}, 1, 0), ("a", 1, 0.2), ({"x": 1}, "b", 0.4), ({}, 1, 0.5), ({"x": 1}, 1, 0.8),
             ({"x": 1}, "c", 3), ({"x": 2}, 2, 3.5)]]
    out, dropped, _ = _same_as_rows(query, rows, monkeypatch)
    # rows 2 and 4: no ``x`` to group by; rows 3 and 6: WHERE cannot add 1 to a string
    assert sorted(d[0] for d in dropped) == [2, 3, 4, 6] and "'n': 2" in out


@pytest.mark.parametrize("longest, times, n", [
    # an earlier row moves the session's end earlier, twice the session's entry in the end heap (it
    # closes once: two entries at its end once made the close fail)
    (3, [0, 0.8, 1.6, 2.4, -0.5, 5, 6.6, 7.2, 9], 5),
    (3, [0, 0.8, 0.3, 1.5, 2.2, 9], 5),  # an earlier row keeps the last time: 1.5 is within a gap of 0.8
    (1, [0, -0.5, 4.7, 6], 2),  # the end moves before the session's only entry: a new entry closes it
])
def test_rows_out_of_order_within_their_session(monkeypatch, longest, times, n):
    query = (f"SELECT RSTREAM k, count(*) AS n, window_start, window_end FROM session(src, ts, 1 SECONDS, "
             f"{longest} SECONDS) GROUP BY k, window_start EMIT AFTER WATERMARK WITH DELAY 4 SECONDS")
    out, dropped, _ = _same_as_rows(query, [{"k": "a", "ts": T0 + t} for t in times], monkeypatch)
    assert not dropped and f"'n': {n}" in out


def test_only_untagged_session_rows_take_the_inline_join():
    base = "SELECT RSTREAM k, count(*) AS n FROM session(src, 5 SECONDS) {} GROUP BY k, window_start"
    assert build(base.format("")).session_rows
    assert not build(base.format("WHERE window_end > 0")).session_rows  # the row is tagged
    assert not build(base.format("") + " EMIT ON UPDATE").session_rows
    tumble = base.replace("session(src, 5 SECONDS)", "tumble(src, 5 SECONDS)")
    assert not build(tumble.format("")).session_rows


VALUES = st.one_of(st.integers(-2, 2), st.sampled_from([2.0, 1.5, "a", "b", None, True]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from([0, 0.1, 0.5, 0.99, 1.0, 1.01, 2.5, -0.5, -3]),
                                st.sampled_from(["a", "b", 2, 2.0, None, "missing"]), VALUES), max_size=60),
       tail=st.sampled_from(["GROUP BY k, window_start", "WHERE v > 0 GROUP BY window_end, k",
                             "GROUP BY k, window_start EMIT AFTER WATERMARK WITH DELAY 1 SECONDS"]),
       longest=st.sampled_from(["", ", 2 SECONDS"]))
def test_random_streams_give_the_reference_rows(monkeypatch, steps, tail, longest):
    """Equal times, times exactly one gap or one maximum apart, time going back, keys 2 and 2.0, NULL and
    missing keys, values of every type."""
    rows, t = [], T0
    for dt, k, v in steps:
        t += dt
        row = {"k": k, "v": v, "ts": t}
        if k == "missing":
            del row["k"]
        rows.append(row)
    query = (f"SELECT RSTREAM count(*) AS n, sum(v) AS s, window_start, window_end "
             f"FROM session(src, ts, 1 SECONDS{longest}) {tail}")
    _same_as_rows(query, rows, monkeypatch)

