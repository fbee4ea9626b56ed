"""Journal pruning in a running topology (Spark-free): an endless-like stream through small journal files
keeps the journal's size bounded while every output arrives exactly once, also when a query fails after
its sink wrote a batch it never committed (the restart re-reads that batch: it must not be pruned) and
when the topology is stopped and restored from its checkpoints after files were pruned.

``CheckpointedQuery`` stands in for Spark's micro-batch execution with its checkpoint protocol: it pins
its start seq, logs each batch's end offset (``offsets/N``) before running it and its commit
(``commits/N``) after the sink callback returned, keeps the pipeline snapshot of each batch, and a
restart resumes as Spark does (a batch logged but not committed runs again over the same range)."""
from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest

from sbpy.bql.parser import parse_script
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.operator import OUTPUT_COLUMNS, Pipeline
from sbpy.plugins.registry import PluginRegistries
from sbpy.server import journal as journal_mod
from sbpy.server.journal import JournalWriter
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from topology_util import lines


class CounterSource:
    """``counter``: tuples ``{"i": i}`` for ``i`` below ``n``, resuming after the journaled ones."""

    def __init__(self, params):
        self.n = int(params.get("n", 1000))

    def run(self, ctx):
        for i in range(ctx.skip, self.n):
            ctx.emit({"i": i})


class Ctx:
    def __init__(self, data_dir: Path):
        self.data_dir = data_dir
        self.plugin_registries = PluginRegistries()
        self.plugin_registries.add_source_type("counter", CounterSource)


def _ids(folder: Path) -> list[int]:
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []


def _atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp"
    tmp.write_bytes(data)
    tmp.replace(path)


class CheckpointedQuery:
    """Spark's micro-batch protocol in-process (see the module doc). ``gated``: a batch is planned only
    after ``permit()`` (a slow consumer); ``crash_after``: the batch after whose sink callback the query
    fails before committing."""

    def __init__(self, query_id, journal_dir, inputs, stages, checkpoint_dir, start_seq, on_batch, topology="",
                 initial_state=None, before_batch=None, gated=False, crash_after=None, **_):
        self.ck = Path(checkpoint_dir)
        self.journal_dir, self.inputs = journal_dir, list(inputs)
        self.on_batch, self.before_batch = on_batch, before_batch
        self.pipeline = Pipeline(stages, topology)
        self.crash_after = crash_after
        self.gate = threading.Semaphore(0) if gated else None
        self.error = None
        self.planned = jf.pin_start_seq(self.ck, start_seq)
        self.pos, self.batch, self.replay_end = self.planned, 0, None
        offsets, commits = _ids(self.ck / "offsets"), _ids(self.ck / "commits")
        if offsets:
            last = offsets[-1]
            done = bool(commits) and commits[-1] == last
            self.batch = last + 1 if done else last
            state_of = last if done else last - 1
            if state_of >= 0:
                self.pos = self._end(state_of)
                self.pipeline.restore((self.ck / "state" / f"{state_of}.snap").read_bytes())
            if not done:
                self.replay_end = self._end(last)
            self.planned = self._end(last)
        elif initial_state is not None:
            self.pipeline.restore(initial_state)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _end(self, batch: int) -> int:
        return int(orjson.loads((self.ck / "offsets" / str(batch)).read_bytes().splitlines()[-1])["seq"])

    @property
    def is_active(self):
        return self._thread.is_alive()

    def permit(self, n: int = 1) -> None:
        for _ in range(n):
            self.gate.release()

    def _run(self):
        try:
            while not self._stop.is_set():
                if self.gate is not None and not self.gate.acquire(timeout=0.01):
                    continue
                end = self.replay_end if self.replay_end is not None else jf.read_head(self.journal_dir)
                if end <= self.pos:
                    if self.gate is not None:
                        self.gate.release()
                    self._stop.wait(0.005)
                    continue
                _atomic(self.ck / "offsets" / str(self.batch), b'v1\n{}\n' + orjson.dumps({"seq": end}))
                self.planned, self.replay_end = end, None
                if self.before_batch is not None:
                    self.before_batch(self.batch)
                out = self.pipeline.run(jf.read_entries(self.journal_dir, self.inputs, self.pos, end))
                _atomic(self.ck / "state" / f"{self.batch}.snap", self.pipeline.snapshot())
                self.on_batch(self.batch, [dict(zip(OUTPUT_COLUMNS, r)) for r in out])
                if self.crash_after == self.batch:
                    raise RuntimeError(f"killed after batch {self.batch}'s sink, before its commit")
                _atomic(self.ck / "commits" / str(self.batch), b"v1\n{}")
                self.pos = end
                self.batch += 1
        except BaseException as e:  # noqa: BLE001
            self.error = str(e)

    def stop(self):
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(5)


def starter(registry: list, **options):
    """A ``query_starter`` that records the queries it starts in ``registry``."""

    def start(**spec):
        q = CheckpointedQuery(**spec, **options)
        registry.append(q)
        return q

    return start


def _script(out: Path, n: int) -> str:
    return f"""
        CREATE PAUSED SOURCE s TYPE counter WITH n = {n};
        CREATE STREAM w AS SELECT RSTREAM count(*) AS c, max(i) AS m FROM s [RANGE 10 TUPLES];
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM w;
        RESUME SOURCE s;"""


def _expected(n: int) -> list[dict]:
    return [{"c": min(i + 1, 10), "m": i} for i in range(n)]


def _run(t: Topology, script: str) -> None:
    for p in parse_script(script):
        t.execute(p)


@pytest.fixture
def small_files(monkeypatch):
    """4 KB journal files, pruning considered at every commit; records the largest journal seen."""
    monkeypatch.setattr(journal_mod, "ROLL_BYTES", 4096)
    monkeypatch.setattr(journal_mod, "PRUNE_EVERY", 0.0)
    seen = {"max": 0}
    append = JournalWriter.append

    def measured(self, *args, **kwargs):
        seq = append(self, *args, **kwargs)
        seen["max"] = max(seen["max"], self.log_bytes())
        return seq

    monkeypatch.setattr(JournalWriter, "append", measured)
    return seen


def _count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _disk_bytes(journal_dir: Path) -> int:
    return sum(p.stat().st_size for p in journal_dir.rglob("*.jsonl"))


N = 30_000


def test_the_journal_stays_bounded_and_every_output_arrives_once(tmp_path, small_files):
    out = tmp_path / "out.jsonl"
    queries: list = []
    t = Topology("t", Ctx(tmp_path / "data"), query_starter=starter(queries))
    try:
        _run(t, _script(out, N))
        assert wait_until(lambda: _count(out) >= N, 120)
        total = N * len(jf.encode_entry(N, 1732480000000000, {"i": N}))  # what an unpruned journal holds
        assert small_files["max"] < total / 5, (small_files["max"], total)
        assert _disk_bytes(t.journal.dir) < total / 5
        assert t.journal.pruned_bytes > total / 2
        assert jf.read_pruned(t.journal.dir / "s")["count"] > N / 2
    finally:
        t.stop()
    assert lines(out) == _expected(N)


def test_a_batch_written_but_not_committed_is_read_again_after_pruning(tmp_path, small_files):
    out = tmp_path / "out.jsonl"
    queries: list = []
    crash = starter(queries, crash_after=25)
    t = Topology("t", Ctx(tmp_path / "data"),
                 query_starter=lambda **spec: crash(**spec) if not queries else starter(queries)(**spec))
    try:
        _run(t, _script(out, N))
        assert wait_until(lambda: len(queries) == 2, 60)  # failed, restarted by the topology's monitor
        assert "killed after batch 25" in (queries[0].error or "")
        assert wait_until(lambda: _count(out) >= N, 120)
        assert queries[1].error is None
        assert t.journal.pruned_bytes > 0
    finally:
        t.stop()
    assert lines(out) == _expected(N)  # batch 25 was written once (the sink's commit record), not lost


def test_a_restored_topology_resumes_after_pruned_files(tmp_path, small_files):
    out = tmp_path / "out.jsonl"
    data = tmp_path / "data"
    queries: list = []
    t = Topology("t", Ctx(data), query_starter=starter(queries))
    _run(t, _script(out, N))
    assert wait_until(lambda: _count(out) >= N // 3, 60)
    t.stop()  # mid-stream; the journal, checkpoints and sink commit record stay
    assert jf.read_pruned(t.journal.dir / "s")["count"] > 0
    again: list = []
    t2 = Topology("t", Ctx(data), query_starter=starter(again))
    t2.recovering = t2.defer_consumers = True  # what persistence does when it replays the statements
    try:
        _run(t2, _script(out, N))
        t2.start_deferred()
        t2.recovering = t2.defer_consumers = False
        assert wait_until(lambda: _count(out) >= N, 120)
        assert again[0].error is None
    finally:
        t2.stop()
    assert lines(out) == _expected(N)


@pytest.mark.parametrize("n", [3000])
def test_a_new_reader_starts_at_head_and_needs_no_pruned_entry(tmp_path, small_files, n):
    """A source nobody reads keeps only its newest file; a sink attached later reads from the HEAD."""
    out = tmp_path / "late.jsonl"
    queries: list = []
    t = Topology("t", Ctx(tmp_path / "data"), query_starter=starter(queries))
    try:
        _run(t, f"CREATE PAUSED SOURCE s TYPE counter WITH n = {n}; RESUME SOURCE s;")
        assert wait_until(lambda: t.journal.ended("s"), 60)
        t.journal._next_prune = 0.0
        _run(t, "CREATE SOURCE s2 TYPE counter WITH n = 600;")  # its commits prune the unread log of s
        assert wait_until(lambda: len(jf.log_files(t.journal.dir / "s")) == 1, 30)
        _run(t, f'CREATE SINK k TYPE file WITH path = "{out}"; INSERT INTO k FROM s;')
        assert t.consumers["k"].done  # s ended before the sink came: nothing will arrive
    finally:
        t.stop()
    assert lines(out) == []

