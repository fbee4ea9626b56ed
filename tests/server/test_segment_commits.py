"""The ``file`` source's chunks committed together (Spark-free): ``JournalWriter.append_segments``
writes exactly the entries one ``append_segment`` per chunk and ``end`` write (same log bytes, HEAD,
counts, resume segment and backlog answers); ``chunk_info`` counts lines as the reader splits them;
through a topology a file read at once is one commit with its end marker, a slower one commits every
``SEGMENT_GROUP_SECONDS``, and the tuples a reader gets are the same either way."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sbpy.bql.parser import parse_script
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.plugins.builtin import sources
from sbpy.server.journal import JournalWriter
from sbpy.server.nodes import source_node
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local
from topology_util import Ctx


def _seg(start: int, n: int, k: int) -> dict:
    return {"path": "/x", "start": start, "end": start + 10 * n, "n": n, "line": 1, "pass": 0, "k": k,
            "crc": start}


_segs = hs.lists(hs.integers(1, 40).flatmap(lambda n: hs.tuples(hs.just(n), hs.integers(0, n))),
                 min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(segs=_segs, tuples_before=hs.integers(0, 3), cuts=hs.sets(hs.integers(1, 11)), end=hs.booleans())
def test_append_segments_writes_what_one_commit_per_segment_writes(tmp_path_factory, segs, tuples_before,
                                                                    cuts, end):
    tmp = tmp_path_factory.mktemp("j")
    entries = [(100 + i, _seg(1000 * i, n, k)) for i, (n, k) in enumerate(segs)]
    one, grouped = JournalWriter(tmp / "one", fsync=False), JournalWriter(tmp / "grouped", fsync=False)
    for w in (one, grouped):
        if tuples_before:
            w.append("f", [(1, {"i": i}) for i in range(tuples_before)])
    for ts, seg in entries:
        one.append_segment("f", ts, seg)
    if end:
        one.end("f")
    bounds = [0] + sorted(c for c in cuts if c < len(entries)) + [len(entries)]
    for a, b in zip(bounds, bounds[1:]):
        grouped.append_segments("f", entries[a:b], end=end and b == len(entries))
    assert (tmp / "one/f/log.jsonl").read_bytes() == (tmp / "grouped/f/log.jsonl").read_bytes()
    assert one.head == grouped.head == jf.read_head(tmp / "grouped")
    assert one.count("f") == grouped.count("f") and one.last_segment("f") == grouped.last_segment("f")
    assert one.ended("f") == grouped.ended("f") == end
    for after in range(0, one.head + 1):
        assert grouped.backlog("f", after) == one.backlog("f", after), after
    one.close()
    grouped.close()
    recovered = JournalWriter(tmp / "grouped", fsync=False)  # a restart reads the grouped log alike
    assert (recovered.head, recovered.count("f"), recovered.last_segment("f"), recovered.ended("f")) == \
        (one.head, one.count("f"), one.last_segment("f"), end)
    recovered.close()


def test_append_segments_after_the_end_is_refused(tmp_path):
    w = JournalWriter(tmp_path / "j", fsync=False)
    w.append_segments("f", [(1, _seg(0, 3, 3))], end=True)
    with pytest.raises(ValueError, match="already ended"):
        w.append_segments("f", [(1, _seg(30, 3, 3))])
    assert w.head == 4


def _split_count(chunk: bytes) -> tuple[int, int]:
    """``(lines, non-blank lines)`` as ``expand`` reads a chunk: split at ``\\n``, blank when it strips
    to nothing."""
    pieces = chunk.split(b"\n")
    if chunk.endswith(b"\n") or not chunk:
        pieces = pieces[:-1]
    return len(pieces), sum(1 for p in pieces if p.strip())


@settings(max_examples=300, deadline=None)
@given(hs.lists(hs.sampled_from([b"\n", b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"{}", b"a", b"\xc3\xa9",
                                 b"\x1c"]), max_size=40))
def test_chunk_info_counts_as_the_reader_splits(parts):
    chunk = b"".join(parts)
    assert js.chunk_info(chunk) == _split_count(chunk)
    assert js.chunk_info(memoryview(bytearray(chunk + b"tail"))[:len(chunk)]) == _split_count(chunk)


def _reference_chunks(path, size: int) -> list[dict]:
    """The file source's segments as it cut them before reading into one buffer: a ``bytes`` read per
    chunk, cut after its last newline (a longer line read on to its end)."""
    out, offset, line = [], 0, 1
    with open(path, "rb") as f:
        while chunk := f.read(size):
            if len(chunk) == size:
                cut = chunk.rfind(b"\n")
                if cut < 0:
                    chunk += f.readline()
                else:
                    chunk = chunk[:cut + 1]
                    f.seek(offset + len(chunk))
            seg = js.make_segment(str(path), offset, chunk, line, 0, None)
            offset, line = offset + len(chunk), line + seg["n"]
            out.append(seg)
    return out


@settings(max_examples=80, deadline=None)
@given(lines=hs.lists(hs.sampled_from(["", " ", "\t", '{"a":1}', '{"b":"' + "x" * 30 + '"}', "\u00e9", "\r"]),
                      max_size=30),
       size=hs.integers(1, 48), final_newline=hs.booleans())
def test_file_source_chunks_are_cut_as_before(tmp_path_factory, lines, size, final_newline):
    path = tmp_path_factory.mktemp("f") / "in.jsonl"
    path.write_bytes(("\n".join(lines) + ("\n" if final_newline and lines else "")).encode("utf-8"))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(sources, "CHUNK_BYTES", size)
        got = list(sources.FileSource({"path": str(path)})._chunks(0, 1, 0))
    assert got == _reference_chunks(path, size)


def test_chunk_info_counts_runs_of_blank_lines():
    assert js.chunk_info(b"a\n\n\nb\n") == (4, 2)  # three newlines in a row: two blank lines
    assert js.chunk_info(b"a\n\x0b\nb") == (3, 2)  # a line of a vertical tab is blank too


# ---------------------------------------------------------------- through a topology


@pytest.fixture
def commits(tmp_path, monkeypatch):
    """A topology and the journal commits of its node ``s``: ``(first seq, last seq)`` each."""
    seen: list[tuple[int, int]] = []
    commit = JournalWriter._commit

    def counted(self, node, text, first, seq, tuples, entries=None):
        commit(self, node, text, first, seq, tuples, entries)
        if node == "s":
            seen.append((first, seq))

    monkeypatch.setattr(JournalWriter, "_commit", counted)
    monkeypatch.setattr(sources, "CHUNK_BYTES", 64)  # ~6 lines a chunk
    t = Topology("t", Ctx(tmp_path / "data"), query_starter=start_local)
    yield t, seen
    t.stop()


def _source(t, path):
    for p in parse_script(f'CREATE PAUSED SOURCE s TYPE file WITH path = "{path}"; RESUME SOURCE s;'):
        t.execute(p)
    assert wait_until(lambda: t.node("source", "s")["state"] == "stopped", 20)


def _rows(t):
    return [(r[0], jf.decode_data(r[3]) if r[3] is not None else r[5]) for r in
            jf.read_entries(t.journal.dir, ["s"], 0, t.journal.head)]


def test_a_file_read_at_once_is_one_commit_with_its_end_marker(commits, tmp_path, monkeypatch):
    t, seen = commits
    monkeypatch.setattr(source_node, "SEGMENT_GROUP_SECONDS", 60.0)  # however slow the machine is
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(200)))
    _source(t, src)
    assert seen == [(1, 201)]  # 200 lines in ~30 chunks and the end marker: one commit
    assert _rows(t) == [(i + 1, {"i": i}) for i in range(200)] + [(201, None)]
    assert t.node("source", "s")["status"]["output_stats"]["num_dropped"] == 200  # nothing reads s


def test_a_slow_file_commits_every_group_window(commits, tmp_path, monkeypatch):
    """A chunk waits for the next ones at most ``SEGMENT_GROUP_SECONDS`` (here 0: one commit each, none
    left for the end marker to join); what a reader gets does not depend on how they were grouped."""
    t, seen = commits
    monkeypatch.setattr(source_node, "SEGMENT_GROUP_SECONDS", 0.0)
    src = tmp_path / "in.jsonl"
    texts = [json.dumps({"i": i}) if i % 9 else "" for i in range(100)]
    src.write_text("".join(x + "\n" for x in texts))
    _source(t, src)
    segs = [json.loads(line)["seg"] for line in jf.node_log_path(t.journal.dir, "s").read_text().splitlines()
            if '"seg"' in line]
    assert len(seen) == len(segs) + 1 and len(segs) > 10  # a commit per chunk, then the end marker's
    assert seen[-1] == (101, 101) and all(b[0] == a[1] + 1 for a, b in zip(seen, seen[1:]))
    assert _rows(t) == [(i + 1, {"i": i}) for i in range(100) if i % 9] + [(101, None)]
    assert t.node("source", "s")["status"]["output_stats"]["num_dropped"] == 88
