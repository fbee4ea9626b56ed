"""snapshot()/restore() mid-window: a restored processor continues exactly like the original."""
import pytest
from timeplus_util import T0, Feeder, build

ROWS = [{"k": "a", "v": 1, "ts": T0}, {"k": "b", "v": 2, "ts": T0 + 1}, {"k": "a", "v": 3, "ts": T0 + 2},
        {"k": "b", "v": 4, "ts": T0 + 6}, {"k": "a", "v": 5, "ts": T0 + 4}, {"k": "a", "v": 6, "ts": T0 + 9},
        {"k": "b", "v": 7, "ts": T0 + 3}, {"k": "b", "v": 8, "ts": T0 + 15}, {"k": "a", "v": 9, "ts": T0 + 16}]

QUERIES = [
    "SELECT RSTREAM k, sum(v) AS s, window_start FROM tumble(src, ts, 5 SECONDS) GROUP BY k, window_start",
    "SELECT RSTREAM count(*) AS c, window_start, window_end FROM hop(src, ts, 2 SECONDS, 6 SECONDS) "
    "GROUP BY window_start, window_end EMIT AFTER WATERMARK WITH DELAY 3 SECONDS",
    "SELECT RSTREAM k, count(*) AS c, window_start, window_end FROM session(src, ts, 3 SECONDS) "
    "GROUP BY k, window_start, window_end EMIT AFTER WATERMARK WITH DELAY 2 SECONDS",
    "SELECT RSTREAM k, max(v) AS m, window_start FROM tumble(src, ts, 5 SECONDS) GROUP BY k, window_start "
    "EMIT ON UPDATE",
    "SELECT RSTREAM k, count(*) AS c FROM src GROUP BY k LIMIT 5 EMIT ON UPDATE",
    "SELECT RSTREAM v, window_start FROM session(src, ts, 3 SECONDS)",
]


def _run(query, split=None):
    f = Feeder(query)
    out = []
    for i, row in enumerate(ROWS):
        if i == split:
            data = f.proc.snapshot()
            fresh = build(query)
            fresh.restore(data)
            f.proc = fresh
        out.append(f.push(**row))
    out.append(f.finish())
    return out, [(d.tuple.seq, d.error) for d in f.dropped]


@pytest.mark.parametrize("query", QUERIES)
def test_restore_at_every_point_gives_the_same_run(query):
    whole = _run(query)
    assert any(whole[0])
    for split in range(1, len(ROWS)):
        assert _run(query, split) == whole, f"split at {split}"


def test_restore_keeps_periodic_state():
    q = "SELECT RSTREAM k, count(*) AS c, window_start FROM tumble(src, ts, 5 SECONDS) GROUP BY k, window_start EMIT PERIODIC 1 SECONDS"
    f = Feeder(q)
    f.push(k="a", ts=T0)
    f.tick(1000)
    f.push(k="a", ts=T0 + 1)
    f.push(k="b", ts=T0 + 6)  # closes [0,5) with a pending change
    restored = build(q)
    restored.restore(f.proc.snapshot())
    g = Feeder(q, restored)
    assert g.tick(1000.5) == []  # the period boundary survived the restore
    assert g.tick(1001) == f.tick(1001) == [{"k": "a", "c": 2, "window_start": T0},
                                           {"k": "b", "c": 1, "window_start": T0 + 5}]


def test_snapshot_is_independent_of_later_changes():
    q = QUERIES[0]
    f = Feeder(q)
    f.push(**ROWS[0])
    data = f.proc.snapshot()
    f.push(**ROWS[1])
    r = build(q)
    r.restore(data)
    assert Feeder(q, r).finish() == [{"k": "a", "s": 1, "window_start": T0}]


def test_a_snapshot_with_count_columns_as_lists_restores():
    """Snapshots written before ``count(*)`` columns became None (session 14: an empty list per group) still
    restore, and the windows continue exactly as without the snapshot."""
    import pickle

    from timeplus_util import Feeder, build

    q = ("SELECT RSTREAM k, count(*) AS n, sum(v) AS s, window_start FROM hop(src, ts, 5 SECONDS, 10 SECONDS) "
         "GROUP BY k, window_start")
    rows = [{"k": i % 3, "v": i * 1.5 if i % 7 else "x", "ts": 1000 + i * 0.7} for i in range(60)]
    whole = Feeder(q)
    reference = [whole.push(**r) for r in rows] + [whole.finish()]
    first = Feeder(q)
    head = [first.push(**r) for r in rows[:30]]
    state = pickle.loads(first.proc.snapshot())
    count_columns = 0
    for pane in state["panes"]:
        for g, (key, row, n, columns, errors) in enumerate(pane[4]):
            columns = [[] if c is None else c for c in columns]
            count_columns += sum(1 for c in columns if c == [])
            pane[4][g] = (key, row, n, columns, list(errors))
    assert count_columns  # the old form: count(*) kept an empty list
    again = Feeder(q, build(q))
    again.seq = first.seq
    again.proc.restore(pickle.dumps(state))
    assert head + [again.push(**r) for r in rows[30:]] + [again.finish()] == reference
