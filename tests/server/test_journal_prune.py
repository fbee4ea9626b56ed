"""Journal rolling and pruning, unit level: a rolled journal reads exactly as the one-file journal (the
reference), pruning deletes only what no reader needs (reads below it fail loudly), a restarted writer
after a prune (also one interrupted half-way) knows its counts and segments, backlog counting, the
checkpoint positions and the pruning decision (``journal_prune.prune_floors``)."""
from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbpy.bql.spark import checkpoint_positions as cp
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.server import journal_prune
from sbpy.server.journal import JournalWriter
from sbpy.server.nodes import graph

# ---------------------------------------------------------------- a random journal

_op = st.one_of(
    st.tuples(st.just("t"), st.sampled_from("ab"), st.integers(1, 30)),  # append n tuples to a node
    st.tuples(st.just("s"), st.just("f"), st.integers(1, 40)),  # a file segment of n lines
)


def _play(writer: JournalWriter, ops: list, seg_file: Path) -> None:
    """Apply ``ops`` to ``writer``; segments refer to lines of ``seg_file`` (created here)."""
    lines = [orjson.dumps({"line": i}) + b"\n" for i in range(2000)]
    seg_file.write_bytes(b"".join(lines))
    offset, line = 0, 1
    for kind, node, n in ops:
        if kind == "t":
            writer.append(node, [(writer.head * 10, {"v": writer.head + i, "n": node}) for i in range(n)])
        else:
            n = min(n, 2000 - line + 1)
            if n <= 0:
                continue
            chunk = b"".join(lines[line - 1:line - 1 + n])
            writer.append_segment(node, 7, js.make_segment(str(seg_file), offset, chunk, line, 0, None))
            offset, line = offset + len(chunk), line + n


def _pair(tmp_path: Path, ops: list, roll: int) -> tuple[JournalWriter, JournalWriter]:
    ref = JournalWriter(tmp_path / "ref", fsync=False, roll_bytes=1 << 40)
    rolled = JournalWriter(tmp_path / "rolled", fsync=False, roll_bytes=roll)
    _play(ref, ops, tmp_path / "seg.jsonl")
    _play(rolled, ops, tmp_path / "seg.jsonl")
    return ref, rolled


def _node_bytes(node_dir: Path) -> int:
    return sum(path.stat().st_size for _, path in jf.log_files(node_dir))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.tuples(st.sampled_from("ab"), st.integers(1, 5)), min_size=1, max_size=15),
       roll=st.integers(1, 300))
def test_a_log_rolls_exactly_when_its_newest_file_is_full(tmp_path_factory, ops, roll):
    """The files of each node's log are those of a model: an append goes to a new file when the
    newest holds ``roll`` bytes (or there is none), else to the newest."""
    writer = JournalWriter(tmp_path_factory.mktemp("j"), fsync=False, roll_bytes=roll)
    model: dict[str, list[int]] = {"a": [], "b": []}
    for node, n in ops:
        before = _node_bytes(writer.dir / node)
        writer.append(node, [(writer.head * 10, {"v": writer.head + i}) for i in range(n)])
        sizes = model[node]
        if not sizes or sizes[-1] >= roll:
            sizes.append(0)
        sizes[-1] += _node_bytes(writer.dir / node) - before
    for node, sizes in model.items():
        assert [path.stat().st_size for _, path in jf.log_files(writer.dir / node)] == sizes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=25), roll=st.integers(1, 400), cut=st.data())
def test_rolled_journal_reads_as_the_one_file_journal(tmp_path_factory, ops, roll, cut):
    tmp = tmp_path_factory.mktemp("j")
    ref, rolled = _pair(tmp, ops, roll)
    assert rolled.head == ref.head
    head = ref.head
    for _ in range(4):
        after = cut.draw(st.integers(0, head))
        upto = cut.draw(st.integers(after, head))
        for inputs in (["a"], ["a", "b", "f"], ["f"]):
            assert jf.read_entries(rolled.dir, inputs, after, upto) == jf.read_entries(ref.dir, inputs, after, upto)
    for node in "abf":
        assert rolled.count(node) == ref.count(node)
        assert rolled.last_segment(node) == ref.last_segment(node)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=25), roll=st.integers(1, 400), cut=st.data())
def test_prune_keeps_what_readers_after_the_floor_need(tmp_path_factory, ops, roll, cut):
    tmp = tmp_path_factory.mktemp("j")
    ref, rolled = _pair(tmp, ops, roll)
    head = ref.head
    floors = {"a": cut.draw(st.integers(0, head)), "f": cut.draw(st.integers(0, head))}
    default = cut.draw(st.integers(0, head))  # "b": no reader listed
    before = {n: jf.log_files(rolled.dir / n) for n in "abf"}
    rolled.prune(floors, default)
    for node in "abf":
        floor = floors.get(node, default)
        files = jf.log_files(rolled.dir / node)
        if before[node]:
            assert files and files[-1] == before[node][-1]  # the newest file always stays
        for first, path in before[node]:
            if (first, path) not in files:  # a deleted file held no entry above the floor
                assert all(r[0] <= floor for r in jf.read_log(path, node, -1, head)) if path.exists() else True
        for after in {floor, head, cut.draw(st.integers(floor, head))}:
            assert jf.read_log(jf.node_log_path(rolled.dir, node), node, after, head) == \
                jf.read_log(jf.node_log_path(ref.dir, node), node, after, head)
    # a restarted writer after the prune: the same counts, segments and head
    again = JournalWriter(rolled.dir, fsync=False, roll_bytes=roll)
    assert again.head == head
    for node in "abf":
        assert again.count(node) == ref.count(node)
        assert again.last_segment(node) == ref.last_segment(node)


def test_a_read_below_the_pruned_seq_fails_loudly(tmp_path):
    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=100)
    for i in range(20):
        w.append("a", [(0, {"i": i})])
    assert len(jf.log_files(w.dir / "a")) > 3
    assert w.prune({"a": 10}, w.head) > 0
    pruned = jf.read_pruned(w.dir / "a")["seq"]
    assert 0 < pruned <= 10
    with pytest.raises(jf.JournalPrunedError, match="pruned"):
        jf.read_entries(w.dir, ["a"], pruned - 1, w.head)
    rows = jf.read_entries(w.dir, ["a"], 10, w.head)
    assert [jf.decode_data(r[3])["i"] for r in rows] == list(range(10, 20))


def test_a_prune_interrupted_after_its_record_is_finished_by_the_recovery(tmp_path, monkeypatch):
    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=100)
    for i in range(30):
        w.append("a", [(0, {"i": i})])
    w.end("a")
    files = jf.log_files(w.dir / "a")
    head, count = w.head, w.count("a")
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: None)  # killed before the deletions
    w.prune({}, 20)
    monkeypatch.undo()
    assert jf.log_files(w.dir / "a") == files and jf.read_pruned(w.dir / "a")["seq"] > 0
    again = JournalWriter(w.dir, fsync=False, roll_bytes=100)
    assert (again.head, again.count("a"), again.ended("a")) == (head, count, True)
    left = jf.log_files(w.dir / "a")
    assert len(left) < len(files)
    assert [jf.decode_data(r[3])["i"] for r in jf.read_entries(w.dir, ["a"], 20, head) if r[3]] == list(range(20, 30))


def test_a_rolled_file_beyond_head_is_removed_by_the_recovery(tmp_path):
    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=50)
    for i in range(5):
        w.append("a", [(0, {"i": i})])
    head = w.head
    w.close()
    # a commit that started a new file but died before HEAD moved
    jf.rolled_log_path(w.dir, "a", head + 1).write_text(jf.encode_entry(head + 1, 0, {"i": 99}) + "\n")
    again = JournalWriter(w.dir, fsync=False, roll_bytes=50)
    assert not jf.rolled_log_path(w.dir, "a", head + 1).exists()
    assert again.count("a") == 5
    again.append("a", [(0, {"i": 5})])
    assert [jf.decode_data(r[3])["i"] for r in jf.read_entries(w.dir, ["a"], 0, again.head)] == list(range(6))


# ---------------------------------------------------------------- backlog


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=25), cut=st.data())
def test_backlog_counts_the_tuples_after_a_position(tmp_path_factory, ops, cut):
    tmp = tmp_path_factory.mktemp("j")
    w = JournalWriter(tmp / "j", fsync=False, roll_bytes=300)
    _play(w, ops, tmp / "seg.jsonl")
    seqs = {n: [] for n in "abf"}
    for node in "abf":
        for first, path in jf.log_files(w.dir / node):
            for line in path.read_bytes().splitlines():
                entry = jf.decode_entry(line)
                seqs[node] += ([entry["seq"]] * int(entry["seg"]["k"])) if "seg" in entry else [entry["seq"]]
    for _ in range(5):
        pos = cut.draw(st.integers(0, w.head))
        for node in "ab":
            assert w.backlog(node, pos) == sum(1 for s in seqs[node] if s > pos)
        # a segment read only in part counts whole: an upper bound
        assert w.backlog("f", pos) >= sum(1 for s in seqs["f"] if s > pos)
    recovered = JournalWriter(w.dir, fsync=False, roll_bytes=300)  # thinned marks: at most 256 more
    pos = cut.draw(st.integers(0, w.head))
    exact = sum(1 for s in seqs["a"] if s > pos)
    assert exact <= recovered.backlog("a", pos) <= exact + 256


# ---------------------------------------------------------------- checkpoint positions


def _spark_log(folder: Path, batch: int, seq: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / str(batch)).write_text('v1\n{"batchWatermarkMs":0}\n' + orjson.dumps({"seq": seq}).decode())


def test_checkpoint_positions(tmp_path):
    ck = tmp_path / "ck"
    assert cp.planned_seq(ck) is None and cp.committed_seq(ck) is None and cp.needed_after(ck) is None
    jf.pin_start_seq(ck, 5)
    assert (cp.planned_seq(ck), cp.committed_seq(ck), cp.needed_after(ck)) == (5, 5, 5)
    _spark_log(ck / "offsets", 0, 10)
    assert (cp.planned_seq(ck), cp.committed_seq(ck)) == (10, 5)  # batch 0 planned, not committed
    (ck / "commits").mkdir()
    (ck / "commits" / "0").write_text("v1\n{}")
    _spark_log(ck / "offsets", 1, 17)
    (ck / "offsets" / ".2.abc.tmp").write_text("torn")  # a temp file is no batch
    assert (cp.planned_seq(ck), cp.committed_seq(ck), cp.needed_after(ck)) == (17, 10, 10)
    keyed = tmp_path / "k"
    jf.pin_start_seq(keyed / "keyed-v2", 3)
    _spark_log(keyed / "keyed-v2" / "offsets", 0, 40)
    (keyed / "keyed-v2" / "commits").mkdir()
    (keyed / "keyed-v2" / "commits" / "0").write_text("v1\n{}")
    assert cp.needed_after(keyed) == 40  # a keyed plan resumes from its newest committed batch
    _spark_log(keyed / "keyed-v2" / "offsets", 1, 55)  # planned, not committed: re-run from 40
    assert cp.needed_after(keyed) == 40
    jf.pin_start_seq(keyed / "keyed-v3", 7)  # a sub-folder query that has committed nothing yet
    assert cp.needed_after(keyed) == 7
    assert cp.planned_after(keyed) == 55


# ---------------------------------------------------------------- the pruning decision


RUNNING = object()  # a started query's handle


def _consumer(cid, inputs, ck=None, start_seq=0, resume_seq=None, done=False, stopped=False, handle=RUNNING,
              deferred=False):
    return SimpleNamespace(id=cid, chain=graph.Chain(inputs=list(inputs)), checkpoint_dir=ck, start_seq=start_seq,
                           resume_seq=resume_seq, done=done, stopped=stopped, handle=handle, deferred=deferred)


def _topology(consumers, head=100, recovering=False, defer=False):
    return SimpleNamespace(recovering=recovering, defer_consumers=defer, journal=SimpleNamespace(head=head),
                           consumers={c.id: c for c in consumers})


def test_prune_floors_per_node(tmp_path):
    ck1 = tmp_path / "c1"
    jf.pin_start_seq(ck1, 20)
    _spark_log(ck1 / "offsets", 0, 60)
    _spark_log(ck1 / "offsets", 1, 90)
    (ck1 / "commits").mkdir()
    (ck1 / "commits" / "0").write_text("v1\n{}")
    consumers = [
        _consumer("k1", ["s"], ck1),  # committed up to 60 (batch 1 planned to 90, uncommitted)
        _consumer("k2", ["s", "x"], tmp_path / "none", start_seq=70),  # started, not pinned yet
        _consumer("k3", ["y"], tmp_path / "none2", start_seq=0, done=True, handle=None),  # never reads again
        _consumer("k4", ["x"], tmp_path / "none3", start_seq=50, resume_seq=30),  # re-planned: resumes at 30
    ]
    assert journal_prune.prune_floors(_topology(consumers)) == {"s": 60, "x": 30}
    not_started = _consumer("k5", ["y"], None, start_seq=0, handle=None)  # attached, query not started yet
    assert journal_prune.prune_floors(_topology([*consumers, not_started]))["y"] == 0
    assert journal_prune.prune_floors(_topology(consumers, recovering=True)) is None
    assert journal_prune.prune_floors(_topology(consumers, defer=True)) is None
    assert journal_prune.prune_floors(_topology([*consumers, _consumer("d", ["s"], deferred=True)])) is None


def test_maybe_prune_skips_while_a_statement_holds_the_lock(tmp_path):
    import threading

    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=50)
    for i in range(10):
        w.append("a", [(0, {"i": i})])
    topo = _topology([], head=w.head)
    topo.journal, topo._lock, topo.name = w, threading.RLock(), "t"
    holder = threading.Event()
    release = threading.Event()

    def statement():
        with topo._lock:
            holder.set()
            release.wait()

    thread = threading.Thread(target=statement)
    thread.start()
    holder.wait()
    assert journal_prune.maybe_prune(topo) == 0 and len(jf.log_files(w.dir / "a")) > 1
    release.set()
    thread.join()
    w._next_prune = 0.0  # the throttle said yes once already
    assert journal_prune.maybe_prune(topo) > 0
    assert len(jf.log_files(w.dir / "a")) == 1  # nobody reads "a": only its newest file stays
    assert os.path.exists(jf.log_files(w.dir / "a")[0][1])


def test_a_query_that_ends_prunes_once_more_after_it_stopped(tmp_path):
    """The throttle says no right after a prune; ``force`` (a query's end: ``Consumer.stop_later``) prunes
    anyway, and ``stop_later`` does so after the stop, in its own thread."""
    import threading

    from sbpy.server.nodes.consumer import Consumer

    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=50)
    for i in range(10):
        w.append("a", [(0, {"i": i})])
    topo = _topology([], head=w.head)
    topo.journal, topo._lock, topo.name = w, threading.RLock(), "t"
    assert w.prune_due() and not w.prune_due()  # throttled now
    assert journal_prune.maybe_prune(topo) == 0 and len(jf.log_files(w.dir / "a")) > 1
    stopped = threading.Event()
    consumer = Consumer.__new__(Consumer)  # only what stop_later reads
    consumer.id, consumer.topology = "k", topo
    consumer.stop = stopped.set
    consumer.stop_later()
    assert stopped.wait(10)
    deadline = time.monotonic() + 10
    while len(jf.log_files(w.dir / "a")) > 1:
        assert time.monotonic() < deadline, "the journal was not pruned after the query stopped"
        time.sleep(0.01)


def test_counts_survive_when_every_file_of_a_node_is_gone(tmp_path):
    """A node left with no log file keeps what ``pruned.json`` counted, also through a second restart
    before any append (the writer never gets there by itself: the newest file is never pruned)."""
    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=60)
    for i in range(10):
        w.append("a", [(0, {"i": i})])
    w.prune({}, w.head)
    head, count = w.head, jf.read_pruned(w.dir / "a")["count"]
    assert 0 < count < 10
    w.close()
    for _first, path in jf.log_files(w.dir / "a"):
        path.unlink()
    for _ in range(2):
        again = JournalWriter(w.dir, fsync=False, roll_bytes=60)
        assert (again.head, again.count("a")) == (head, count)
        again.close()
