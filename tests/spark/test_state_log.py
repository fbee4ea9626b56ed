"""The logged state layout (``state_log``) against the snapshot layout (``state_function``), without Spark.

Random journal streams cut into random micro-batches run through the reference (``state_function``
with a stand-in ``GroupState``) and through ``LoggedPipeline`` over an in-memory store whose writes
apply when the batch commits, with random events between batches: a worker's cache dropped (another
worker, a restart from the checkpoint), a failed attempt whose writes are discarded (after the batch
ran, or after it failed half-way), and tiny or large rebase bounds. Every batch's output rows must equal
the reference's, dropped and stat rows included.
"""
from __future__ import annotations

import itertools
import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbpy.bql.spark import state_log
from sbpy.bql.spark.operator import JOURNAL_COLUMNS, Pipeline, StageSpec
from sbpy.bql.spark.state_function import _output_frame, state_function
from sbpy.bql.spark.state_log import LOGGED, SNAPSHOT, LoggedPipeline, pin_layout, read_layout, replayable
from sbpy.bql.spark.testing import StubGroupState, running_count

_IDS = itertools.count()

STAGE_SETS = {
    "window": [StageSpec("s", "SELECT RSTREAM count(*) AS c, sum(x) AS t FROM src [RANGE 5 TUPLES]",
                         ("src",))],
    "istream": [StageSpec("s", "SELECT ISTREAM x, y FROM src [RANGE 3 TUPLES] WHERE x % 3 != 1", ("src",))],
    "chain_join": [
        StageSpec("a", "SELECT ISTREAM x AS x FROM src [RANGE 4 TUPLES]", ("src",)),
        StageSpec("j", "SELECT ISTREAM a:x AS ax, o:y AS oy FROM a [RANGE 3 TUPLES], "
                       "other [RANGE 2 TUPLES] AS o "
                       "WHERE a:x % 2 = o:y % 2", ("a", "other")),
    ],
}


class MemoryStore:
    """``LogStore`` with a transaction: writes are staged and applied by ``commit``."""

    def __init__(self) -> None:
        self.committed_base: bytes | None = None
        self.committed_log: list[tuple[int, bytes]] = []
        self.meta = None
        self.begin()

    def begin(self) -> None:
        self._base, self._log, self.written = self.committed_base, list(self.committed_log), 0

    def commit(self, meta) -> None:
        self.committed_base, self.committed_log = self._base, self._log
        if meta is not None:
            self.meta = meta

    def base(self):
        return self.committed_base

    def log(self):
        return list(reversed(self.committed_log))  # order must come from n

    def write_base(self, snap):
        self._base, self.written = snap, self.written + len(snap)

    def clear_log(self):
        self._log = []

    def append(self, n, rows):
        self._log.append((n, rows))
        self.written += len(rows)


def _journal(draw_items) -> list[tuple]:
    rows, seq = [], 0
    for kind, x, y in draw_items:
        seq += 1
        if kind == "end":
            rows.append((seq, "other", 0, None, True, None))
        elif kind == "bad":
            rows.append((seq, "src", seq * 1000, "{not json", False, None))
        else:
            name = "other" if kind == "other" else "src"
            rows.append((seq, name, seq * 1000, json.dumps({"x": x, "y": y}), False, None))
    return rows


def _frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=list(JOURNAL_COLUMNS))


def _normal(df: pd.DataFrame) -> list[tuple]:
    return [tuple(None if v is None or (isinstance(v, float) and pd.isna(v)) else v for v in r)
            for r in df.astype(object).itertuples(index=False, name=None)]


def _reference(stages, batches, initial=None) -> list[list[tuple]]:
    fn = state_function(f"ref{next(_IDS)}", stages, initial=initial)
    state = StubGroupState()
    return [_normal(next(fn((0,), iter([_frame(b)]), state))) for b in batches]


item = st.tuples(st.sampled_from(["src", "src", "src", "other", "bad", "end"]),
                 st.integers(-5, 5), st.integers(-5, 5))
event = st.sampled_from(["ok", "ok", "ok", "drop_cache", "fail_after", "fail_before", "other_worker"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from(sorted(STAGE_SETS)), items=st.lists(item, min_size=1, max_size=40),
       cuts=st.lists(st.integers(1, 6), min_size=1, max_size=40), events=st.lists(event, max_size=40),
       bound=st.sampled_from([0, 200, 1 << 20]), handed=st.booleans())
def test_logged_layout_matches_snapshot_layout(which, items, cuts, events, bound, handed):
    stages = STAGE_SETS[which]
    rows = _journal(items)
    batches, k = [], 0
    for c in itertools.cycle(cuts):
        if k >= len(rows):
            break
        batches.append(rows[k:k + c])
        k += c
    initial = None
    if handed and len(batches) > 1:  # the first batch ran elsewhere; its state is handed over
        first = Pipeline(stages)
        first.run(batches.pop(0))
        initial = first.snapshot()
    want = _reference(stages, batches, initial)

    def make() -> Pipeline:
        return Pipeline(stages)

    store = MemoryStore()
    workers = [LoggedPipeline(make, initial, min_log_bytes=bound) for _ in range(2)]
    current = 0
    got = []
    for i, batch in enumerate(batches):
        ev = events[i] if i < len(events) else "ok"
        if ev == "drop_cache":
            workers[current] = LoggedPipeline(make, initial, min_log_bytes=bound)
        elif ev == "other_worker":
            current = 1 - current
        elif ev == "fail_after":  # the attempt ran and wrote, then its commit was lost
            store.begin()
            workers[current].run(list(batch), store.meta, store)
        elif ev == "fail_before":  # the attempt failed half-way through the batch
            store.begin()
            with pytest.raises(TypeError):
                workers[current].run([*batch[: len(batch) // 2], None], store.meta, store)
        store.begin()
        out, meta = workers[current].run(list(batch), store.meta, store)
        store.commit(meta)
        got.append(_normal(_output_frame(out)))
    assert got == want


def test_warm_worker_reads_nothing_and_writes_in_proportion_to_the_batch():
    stages = [StageSpec("s", "SELECT RSTREAM count(*) AS c FROM src [RANGE 3000 TUPLES]", ("src",))]
    worker = LoggedPipeline(lambda: Pipeline(stages), min_log_bytes=0)
    store, written, appended, seq = MemoryStore(), [], 0, 0
    for _ in range(300):
        batch = []
        for _ in range(20):
            seq += 1
            batch.append((seq, "src", seq * 1000, json.dumps({"x": seq}), False, None))
        store.begin()
        _out, meta = worker.run(batch, store.meta, store)
        store.commit(meta)
        written.append(store.written)
        appended += meta.log_bytes and len(store.committed_log[-1][1])
    assert worker.rebuilds == 1  # the first batch only: a warm worker reads nothing
    median = sorted(written)[len(written) // 2]
    entry = len(store.committed_log[-1][1]) if store.committed_log else median
    assert median <= 2 * entry  # most batches write their rows only
    assert max(written[1:]) > 20 * median  # and some later one a new base
    # bases are paid for by the log they end
    assert sum(written) <= (state_log.REBASE_RATIO + 2) * appended + 2 * max(written)
    # the snapshot layout writes the whole window (3000 tuples) every batch
    assert len(worker.pipeline.snapshot()) > 20 * median


def test_replayable_stages():
    ok = [StageSpec("s", "SELECT RSTREAM count(*) AS c, abs(x) AS a FROM src [RANGE 5 TUPLES]", ("src",))]
    assert replayable(ok)
    for text in ("SELECT RSTREAM random() AS r FROM src [RANGE 5 TUPLES]",
                 "SELECT RSTREAM now() AS r FROM src [RANGE 5 TUPLES]",
                 "SELECT RSTREAM no_such_udf(x) AS r FROM src [RANGE 5 TUPLES]"):
        assert not replayable([StageSpec("s", text, ("src",))]), text
    assert not replayable([StageSpec("s", "", ("src",), factory=running_count)])


def test_not_replayable_stages_rebase_every_batch():
    stages = [StageSpec("s", "SELECT RSTREAM random() AS r, x FROM src [RANGE 2 TUPLES]", ("src",))]
    worker = LoggedPipeline(lambda: Pipeline(stages), replay=replayable(stages))
    store = MemoryStore()
    for seq in range(1, 4):
        store.begin()
        _out, meta = worker.run([(seq, "src", seq, json.dumps({"x": seq}), False, None)], store.meta, store)
        store.commit(meta)
        assert meta.entries == 0 and store.committed_log == [] and store.committed_base is not None


def test_pin_layout(tmp_path):
    fresh = tmp_path / "a"
    assert pin_layout(fresh, LOGGED) == LOGGED
    assert pin_layout(fresh, SNAPSHOT) == LOGGED  # recorded at the first start
    assert read_layout(fresh) == LOGGED
    old = tmp_path / "b"
    (old / "commits").mkdir(parents=True)
    (old / "commits" / "0").write_text("v1")
    assert pin_layout(old, LOGGED) == SNAPSHOT  # batches written by the snapshot layout: kept
    bad = tmp_path / "c"
    bad.mkdir()
    (bad / state_log.LAYOUT_FILE).write_text(json.dumps({"layout": "logged-v9"}))
    with pytest.raises(ValueError, match="cannot read"):
        pin_layout(bad, LOGGED)
    assert read_layout(tmp_path / "none") == SNAPSHOT


def test_wanted_layout(monkeypatch):
    monkeypatch.delenv(state_log.LAYOUT_ENV, raising=False)
    assert state_log.wanted_layout(False) == LOGGED
    assert state_log.wanted_layout(True) == SNAPSHOT
    monkeypatch.setenv(state_log.LAYOUT_ENV, "snapshot")
    assert state_log.wanted_layout(False) == SNAPSHOT
    assert state_log.wanted_layout(False, True) == SNAPSHOT


def test_wanted_layout_follows_the_plan(monkeypatch):
    from sbpy.bql.plan import plan_query

    monkeypatch.delenv(state_log.LAYOUT_ENV, raising=False)

    def holds(text: str) -> bool:
        return plan_query(["src"], [("w", text, ["src"])]).holds_tuples

    big = holds("SELECT ISTREAM * FROM src [RANGE 1000 TUPLES]")
    timed = holds("SELECT ISTREAM * FROM src [RANGE 5 SECONDS]")
    small = holds("SELECT ISTREAM * FROM src [RANGE 10 TUPLES]")
    panes = holds("SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, 10 SECONDS) GROUP BY k, window_start")
    assert (big, timed, small, panes) == (True, True, False, False)
    assert state_log.wanted_layout(False, big) == LOGGED
    assert state_log.wanted_layout(False, panes) == SNAPSHOT
    assert state_log.wanted_layout(True, big) == SNAPSHOT
    monkeypatch.setenv(state_log.LAYOUT_ENV, "logged")
    assert state_log.wanted_layout(False, panes) == LOGGED
