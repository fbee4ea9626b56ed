"""The journal's history for ``table()``: a node that retains ``n`` tuples keeps exactly its last ``n``
through any rolling, pruning (no reader holding it back), backpressure mark trimming and restart;
``read_history`` returns them, compared with the same appends to a journal that never prunes (the
reference). A pinned read survives a prune that happens while it reads; nodes without history prune as
before."""
from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.server.history import read_history
from sbpy.server.journal import JournalWriter

_op = st.one_of(
    st.tuples(st.just("t"), st.sampled_from("ab"), st.integers(1, 12)),  # append n tuples to a node
    st.tuples(st.just("s"), st.just("a"), st.integers(1, 12)),  # a file segment of n lines
    st.tuples(st.just("p"), st.just(""), st.just(0)),  # prune: no reader holds any node back
    st.tuples(st.just("m"), st.just("a"), st.just(0)),  # backpressure forgets marks below HEAD
)


def _play(writer: JournalWriter, ops: list, seg_file: Path, start: int = 0) -> int:
    """Apply ``ops``; segment lines come from ``seg_file`` from line ``start``; returns the next line."""
    lines = [orjson.dumps({"line": i}) + b"\n" for i in range(4000)]
    if not seg_file.exists():
        seg_file.write_bytes(b"".join(lines))
    line = start
    for kind, node, n in ops:
        if kind == "t":
            writer.append(node, [(writer.head * 10, {"v": writer.head + i, "n": node}) for i in range(n)])
        elif kind == "s":
            chunk = b"".join(lines[line:line + n])
            offset = sum(len(x) for x in lines[:line])
            writer.append_segment(node, 7, js.make_segment(str(seg_file), offset, chunk, line + 1, 0, None))
            line += n
        elif kind == "p":
            writer.prune({}, writer.head)
        else:
            writer.forget_marks(node, writer.head)
    return line


def _all_tuples(writer: JournalWriter, node: str) -> list:
    rows = jf.read_log(jf.node_log_path(writer.dir, node), node, 0, writer.head)
    return [(r[0], r[2], jf.decode_data(r[3])) for r in rows if r[3] is not None and not r[4]]


def _as_rows(tuples: list) -> list:
    return [(t.seq, jf.ts_to_us(t.ts), t.data) for t in tuples]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=30), more=st.lists(_op, max_size=10),
       roll=st.integers(1, 400), keep=st.integers(1, 40))
def test_a_retained_node_keeps_its_last_n_tuples(tmp_path_factory, ops, more, roll, keep):
    tmp = tmp_path_factory.mktemp("h")
    ref = JournalWriter(tmp / "ref", fsync=False, roll_bytes=1 << 40)
    pruned = JournalWriter(tmp / "pruned", fsync=False, roll_bytes=roll)
    pruned.retain("a", keep)
    ref.retain("a", keep)
    line = _play(ref, ops, tmp / "seg.jsonl")
    _play(pruned, ops, tmp / "seg.jsonl")
    expected = _all_tuples(ref, "a")[-keep:]
    assert _as_rows(read_history(pruned, "a")) == expected
    assert _as_rows(read_history(ref, "a")) == expected

    # a restarted writer (the topology replays CREATE SOURCE ... history = n) keeps the same history
    pruned.close()
    again = JournalWriter(tmp / "pruned", fsync=False, roll_bytes=roll)
    again.retain("a", keep)
    again.prune({}, again.head)
    assert _as_rows(read_history(again, "a")) == expected
    _play(ref, more, tmp / "seg.jsonl", line)
    _play(again, more, tmp / "seg.jsonl", line)
    assert _as_rows(read_history(again, "a")) == _all_tuples(ref, "a")[-keep:]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=30), roll=st.integers(1, 200))
def test_a_node_without_history_prunes_as_before(tmp_path_factory, ops, roll):
    """Only the retaining node is held back: ``b`` (no history) keeps only its newest file."""
    tmp = tmp_path_factory.mktemp("h")
    w = JournalWriter(tmp / "j", fsync=False, roll_bytes=roll)
    w.retain("a", 5)
    _play(w, ops + [("p", "", 0)], tmp / "seg.jsonl")
    assert len(jf.log_files(w.dir / "b")) <= 1
    assert w.history_floor("b") == float("inf")
    assert w.retained("b") == 0 and read_history(w, "b") == []


def test_a_pinned_read_survives_a_prune(tmp_path):
    """Between ``pin_history`` and ``unpin`` the pinned range stays, even when new tuples would let
    the retention floor move past it."""
    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=1)
    w.retain("a", 3)
    for i in range(10):
        w.append("a", [(i, {"v": i})])
    pin, after, upto = w.pin_history("a")
    for i in range(10, 30):
        w.append("a", [(i, {"v": i})])
    w.prune({}, w.head)
    rows = jf.read_log(jf.node_log_path(w.dir, "a"), "a", after, upto)
    assert [jf.decode_data(r[3])["v"] for r in rows][-3:] == [7, 8, 9]
    w.unpin(pin)
    w.prune({}, w.head)
    assert [t.data["v"] for t in read_history(w, "a")] == [27, 28, 29]
    assert len(jf.log_files(w.dir / "a")) <= 4  # the rest is gone


def test_retention_zero_and_reset_forget_the_history(tmp_path):
    w = JournalWriter(tmp_path / "j", fsync=False, roll_bytes=1)
    w.retain("a", 2)
    for i in range(5):
        w.append("a", [(i, {"v": i})])
    assert w.retained("a") == 2
    w.retain("a", 0)
    assert w.retained("a") == 0 and w.history_floor("a") == float("inf")
    w.retain("a", 2)
    w.reset("a")
    assert w.retained("a") == 0
