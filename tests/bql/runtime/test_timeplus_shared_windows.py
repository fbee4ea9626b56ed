"""The fixed step's shared windows (``timeplus/fixed_step.py``, ``column_steps``' ``add_to_windows``): a
tumble/hop row joins all its windows in one call, with its WHERE and key computed once and its windows
kept for the next rows in the same windows. Checked against the reference row panes (one WHERE, key
and group per window and row), tuple for tuple."""
import random

import pytest
from sbpy.bql.functions import builtin_numeric
from sbpy.bql.runtime.timeplus.pane_columns import LAYOUT_ENV
from timeplus_util import T0, Feeder, build


def _times(step, n):
    """``n`` times ``step`` seconds apart from ``T0``, with a pause (a window set skipped) and one late
    row every 17."""
    out, t = [], T0
    for i in range(n):
        t += step * (7 if i % 23 == 22 else 1)
        out.append(t - 9 if i % 17 == 16 else t)
    return out


def _rows(step=0.25, n=120):
    return [{"k": "ab"[i % 3 == 0], "v": (i * 7) % 5, "w": "x" if i % 11 == 5 else i, "ts": t}
            for i, t in enumerate(_times(step, n))]


def _run(query, rows, monkeypatch, layout, seed=None):
    monkeypatch.setenv(LAYOUT_ENV, layout)
    if seed is not None:  # random() draws from this generator
        monkeypatch.setattr(builtin_numeric, "_rng", random.Random(seed))
    f = Feeder(query)
    out = [[(repr(o.data), o.ts, o.seq) for o in f.step(**row).outputs] for row in rows]
    out.append(f.finish())
    return repr(out), [(d.tuple.seq, d.error, d.event_type) for d in f.dropped], f.proc


def _same_as_rows(query, rows, monkeypatch, shared, seed=None):
    ref = _run(query, rows, monkeypatch, "rows", seed)
    got = _run(query, rows, monkeypatch, "", seed)
    assert got[2].shared_windows == shared
    assert got[:2] == ref[:2]
    return got


@pytest.mark.parametrize("from_", [
    "tumble(src, ts, 2 SECONDS)",
    "hop(src, ts, 1 SECONDS, 3 SECONDS)",
    "hop(src, ts, 2 SECONDS, 5 SECONDS)",  # the size is no multiple of the slide: 2 or 3 windows per row
    "hop(src, ts, 3 SECONDS, 4 SECONDS)",
    "hop(src, ts, 500 MILLISECONDS, 1500 MILLISECONDS)",  # float window bounds
])
@pytest.mark.parametrize("tail", [
    "GROUP BY k, window_start",
    "GROUP BY window_end, k, window_start",
    "WHERE v != 2 GROUP BY k, window_start, window_end",
    "GROUP BY k, window_start EMIT AFTER WATERMARK WITH DELAY 2 SECONDS",
])
def test_shared_windows_give_the_reference_rows(monkeypatch, from_, tail):
    query = (f"SELECT RSTREAM k, count(*) AS n, sum(v) AS s, max(w + 1) AS m, window_start, window_end "
             f"FROM {from_} {tail}")
    _, dropped, _ = _same_as_rows(query, _rows(), monkeypatch, shared=True)
    assert any("late tuple" in d[1] for d in dropped) and any("output" == d[2] for d in dropped)


def test_a_row_that_where_rejects_first_keeps_no_windows(monkeypatch):
    """The first row of a window set fails WHERE: its windows have no panes yet, the next rows make them."""
    query = ("SELECT RSTREAM k, count(*) AS n, window_start FROM hop(src, ts, 2 SECONDS, 4 SECONDS) "
             "WHERE v > 0 GROUP BY k, window_start")
    rows = [{"k": "a", "v": v, "ts": T0 + t}
            for t, v in [(0, 0), (0.5, 1), (1, 1), (2, 0), (2.5, 0), (3, 2), (4, 1)]]
    _same_as_rows(query, rows, monkeypatch, shared=True)


def test_a_group_error_stays_in_its_group(monkeypatch):
    """A group's first argument error (errors shared by the layout until then) is its own."""
    query = ("SELECT RSTREAM k, sum(w + 1) AS s, window_start FROM hop(src, ts, 1 SECONDS, 2 SECONDS) "
             "GROUP BY k, window_start")
    rows = [{"k": k, "w": w, "ts": T0 + t} for k, w, t in [("a", 1, 0), ("b", "x", 0.5), ("a", 2, 0.6),
                                                           ("b", 3, 0.7), ("c", 4, 0.8)]]
    out, dropped, _ = _same_as_rows(query, rows, monkeypatch, shared=True)
    assert "'k': 'a', 's': 5" in out and "'k': 'c', 's': 5" in out and len(dropped) == 2


def test_a_volatile_where_is_drawn_per_window(monkeypatch):
    """``random()`` in WHERE: the reference draws once per window (hop) or row (tumble); so does the
    step."""
    for from_, shared in [("hop(src, ts, 1 SECONDS, 3 SECONDS)", False),
                          ("tumble(src, ts, 2 SECONDS)", True)]:
        query = (f"SELECT RSTREAM k, count(*) AS n, window_start FROM {from_} WHERE random() < 0.5 "
                 "GROUP BY k, window_start")
        _same_as_rows(query, _rows(), monkeypatch, shared, seed=7)


def test_only_untagged_rows_share_their_windows():
    base = "SELECT RSTREAM k, count(*) AS n FROM {} {} GROUP BY k, window_start"
    assert build(base.format("hop(src, 5 SECONDS, 10 SECONDS)", "")).shared_windows
    assert not build(base.format("hop(src, 5 SECONDS, 10 SECONDS)", "WHERE window_end > 0")).shared_windows
    assert not build(base.format("session(src, 5 SECONDS)", "")).shared_windows
    assert not build(base.format("hop(src, 5 SECONDS, 10 SECONDS)", "") + " EMIT ON UPDATE").shared_windows


def test_a_restore_into_the_same_processor_forgets_the_kept_windows():
    """The kept windows are the panes of the processor's pane map: a restore replaces them."""
    query = ("SELECT RSTREAM k, sum(v) AS s, window_start FROM hop(src, ts, 2 SECONDS, 4 SECONDS) "
             "GROUP BY k, window_start")
    f = Feeder(query)
    f.push(k="a", v=1, ts=T0)
    snap = f.proc.snapshot()
    f.push(k="a", v=10, ts=T0 + 0.5)  # into the kept windows, undone by the restore
    f.proc.restore(snap)
    f.push(k="a", v=100, ts=T0 + 1)
    assert f.finish() == [{"k": "a", "s": 101, "window_start": T0 - 2},
                          {"k": "a", "s": 101, "window_start": T0}]


def test_a_quiet_row_returns_the_shared_empty_result():
    """A fixed-step row that neither drops nor closes a window returns ``NOTHING``, which cannot be
    changed; a late row and a closing row get results of their own."""
    from sbpy.bql.runtime.processor import NOTHING

    f = Feeder("SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, ts, 2 SECONDS) "
               "GROUP BY k, window_start")
    assert f.step(k="a", ts=T0) is NOTHING
    closing = f.step(k="a", ts=T0 + 2.5)
    late = f.step(k="a", ts=T0 + 1)
    assert closing is not NOTHING and len(closing.outputs) == 1
    assert late is not NOTHING and "late tuple" in late.dropped[0].error and NOTHING.dropped == []
    with pytest.raises(TypeError):
        NOTHING.outputs.append(1)
