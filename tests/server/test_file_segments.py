"""The ``file`` source journals its file in segments (Spark-free): write, read, cut, recover, resume,
blank and bad lines, tagged-looking keys, long ints, ``timestamp_field``, and bad lines reaching
``dropped_tuples`` through a topology."""
from __future__ import annotations

import json
import math

import pytest

from sbpy.bql.jsonio import from_json
from sbpy.bql.parser import parse_script
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.plugins.builtin import sources
from sbpy.plugins.builtin.sources import FileSource
from sbpy.server.journal import JournalWriter
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local
from topology_util import Ctx, lines, run

LINES = [
    '{"a": 1, "s": "x"}',
    "",
    "   ",
    "not json",
    '{"$ts": 5, "b": "$x"}',  # a key that looks tagged: escaped, not read as a timestamp
    '{"\\u0024blob": "AA=="}',  # the same in disguise
    '{"big": 123456789012345678901234}',  # beyond int64: a float, as from_json reads it
    '{"neg": -9223372036854775808}',  # int64's minimum stays an int
    "[1, 2]",  # not an object
    '{"n": NaN, "t": "2015-04-10T10:23:00Z"}',
    '{"t": 1.5, "ok": true}',
    '{"t": "bad", "u": "\u00e9"}',
    '{"a": 2}\r',
]


class SegCtx:
    """A source context journaling segments into a real ``JournalWriter``; ``crash_after`` segments it
    raises (a server crash between two commits)."""

    def __init__(self, writer, node="f", crash_after=None):
        self.writer, self.node, self.crash_after = writer, node, crash_after
        self.resume = writer.last_segment(node)
        self.skip, self.stopping, self.segments = writer.count(node), False, 0

    def emit_segment(self, seg):
        if self.crash_after is not None and self.segments >= self.crash_after:
            raise RuntimeError("crash")
        self.writer.append_segment(self.node, 1_000, seg)
        self.segments += 1

    def rewind_requested(self):
        return False


def _expected(texts):
    """What the source reads of ``texts``: (value, error) per non-blank line, as from_json parses them."""
    out = []
    for text in texts:
        if not text.strip():
            continue
        try:
            value = from_json(text.strip())
        except Exception:  # noqa: BLE001
            out.append((None, "cannot parse"))
            continue
        out.append((value, None) if isinstance(value, dict) else (None, "not a JSON object"))
    return out


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _check(rows, texts):
    expected = _expected(texts)
    assert len(rows) == len(expected)
    for (seq, name, ts, text, end, error), (value, err) in zip(rows, expected):
        assert name == "f" and end is False
        if err is None:
            assert error is None and _same(jf.decode_data(text), value), (text, value)
        else:
            assert text is None and err in error and error.startswith("file source: ")


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(sources, "CHUNK_BYTES", 64)


def _file(tmp_path, texts):
    path = tmp_path / "in.jsonl"
    path.write_bytes("".join(t + "\n" for t in texts).encode("utf-8"))
    return path


def test_segments_write_and_read(tmp_path, small_chunks):
    path = _file(tmp_path, LINES)
    w = JournalWriter(tmp_path / "j")
    FileSource({"path": str(path)}).run(SegCtx(w))
    entries = [jf.decode_entry(x) for x in jf.node_log_path(w.dir, "f").read_bytes().splitlines()]
    assert len(entries) > 3 and all("seg" in e for e in entries)  # several chunks, no copied tuples
    assert sum(e["seg"]["n"] for e in entries) == len(LINES) == w.head  # one seq per line
    assert w.count("f") == sum(1 for t in LINES if t.strip())
    rows = jf.read_entries(w.dir, ["f"], 0, w.head)
    _check(rows, LINES)
    assert rows[0][0] == 1 and rows[1][0] == 4  # blank lines 2-3 leave a gap in the seqs
    # the fast path keeps the line's text; a line with "$ is re-encoded (its key escaped)
    assert rows[0][3] == LINES[0] and '"$$ts"' in rows[2][3]


def test_reads_cut_inside_segments(tmp_path, small_chunks):
    path = _file(tmp_path, LINES * 3)
    w = JournalWriter(tmp_path / "j")
    FileSource({"path": str(path)}).run(SegCtx(w))
    full = jf.read_entries(w.dir, ["f"], 0, w.head)
    for step in (1, 2, 5, 7):
        jf._OFFSETS.clear()
        got = []
        for after in range(0, w.head, step):  # max_seqs-like cuts, sequential (remembered offsets)
            got.extend(jf.read_entries(w.dir, ["f"], after, min(after + step, w.head)))
        assert got == full
    for after, upto in ((3, 17), (10, 11), (0, 1), (20, w.head)):  # random access (bisection)
        jf._OFFSETS.clear()
        assert jf.read_entries(w.dir, ["f"], after, upto) == [r for r in full if after < r[0] <= upto]


def test_segments_merge_with_tuple_logs(tmp_path, small_chunks):
    path = _file(tmp_path, ['{"i": %d}' % i for i in range(20)])
    w = JournalWriter(tmp_path / "j")
    w.append("t", [(7, {"x": 0})])
    FileSource({"path": str(path)}).run(SegCtx(w))
    w.append("t", [(7, {"x": 1})])
    w.end("f")
    rows = jf.read_entries(w.dir, ["f", "t"], 0, w.head)
    assert [r[0] for r in rows] == list(range(1, w.head + 1))
    assert [r[1] for r in rows] == ["t"] + ["f"] * 20 + ["t", "f"] and rows[-1][4] is True


def test_timestamp_field(tmp_path, small_chunks):
    path = _file(tmp_path, LINES)
    w = JournalWriter(tmp_path / "j")
    FileSource({"path": str(path), "timestamp_field": "t"}).run(SegCtx(w))
    rows = {jf.decode_data(r[3]).get("ok", r[0]): r[2] for r in jf.read_entries(w.dir, ["f"], 0, w.head) if r[3]}
    assert rows[True] == 1_500_000  # 1.5 epoch seconds
    by_seq = {r[0]: r[2] for r in jf.read_entries(w.dir, ["f"], 0, w.head)}
    assert by_seq[LINES.index('{"n": NaN, "t": "2015-04-10T10:23:00Z"}') + 1] == 1428661380_000_000
    assert by_seq[LINES.index('{"t": "bad", "u": "\u00e9"}') + 1] == 1_000  # a bad value keeps the read time
    assert by_seq[1] == 1_000  # no field: the read time


def test_changed_file_is_reported_not_misread(tmp_path, small_chunks):
    path = _file(tmp_path, ['{"i": %d}' % i for i in range(20)])
    w = JournalWriter(tmp_path / "j")
    FileSource({"path": str(path)}).run(SegCtx(w))
    path.write_text(path.read_text().replace('"i": 3', '"i": 9'))
    rows = jf.read_entries(w.dir, ["f"], 0, w.head)
    bad = [r for r in rows if r[3] is None]
    assert len(bad) == 1 and "changed or are gone" in bad[0][5]
    assert len(rows) < 20


@pytest.mark.parametrize("repeat", [0, 2])
def test_crash_and_resume_from_the_last_segment(tmp_path, small_chunks, repeat):
    texts = ['{"i": %d}' % i for i in range(30)]
    path = _file(tmp_path, texts)
    for crash_after in (0, 1, 4, 9, 13):
        j = tmp_path / f"j{crash_after}"
        w = JournalWriter(j)
        try:
            FileSource({"path": str(path), "repeat": repeat}).run(SegCtx(w, crash_after=crash_after))
        except RuntimeError:
            pass  # crashed (later counts crash in a later pass or never)
        w.close()
        w = JournalWriter(j)  # restarted: the source resumes after its last segment
        ctx = SegCtx(w)
        FileSource({"path": str(path), "repeat": repeat}).run(ctx)
        rows = jf.read_entries(w.dir, ["f"], 0, w.head)
        assert [jf.decode_data(r[3])["i"] for r in rows] == list(range(30)) * (repeat + 1)
        assert w.count("f") == 30 * (repeat + 1)


def test_recover_cuts_torn_tail_and_uncommitted_segment(tmp_path, small_chunks):
    path = _file(tmp_path, ['{"i": %d}' % i for i in range(20)])
    w = JournalWriter(tmp_path / "j")
    with pytest.raises(RuntimeError):
        FileSource({"path": str(path)}).run(SegCtx(w, crash_after=2))
    head, seg, count = w.head, w.last_segment("f"), w.count("f")
    w.close()
    log = jf.node_log_path(w.dir, "f")
    good = log.read_bytes()
    extra = js.encode_segment(head + 1, 0, dict(seg, start=seg["end"], end=seg["end"] + 10)) + "\n"
    for tail in (extra.encode(), b"\0" * 300, b'{"seq":', extra.encode() + b"\0" * 40 + b"\n"):
        log.write_bytes(good + tail)  # beyond HEAD: a segment without its HEAD, zeros, a torn line
        w = JournalWriter(w.dir)
        assert (w.head, w.last_segment("f"), w.count("f")) == (head, seg, count)
        assert log.read_bytes() == good
        w.close()
    w = JournalWriter(w.dir)
    assert w.append("f", [(1, {"x": 1})]) == head + 1  # the log goes on after the cut
    w.close()


def test_writer_without_fsync_writes_the_same(tmp_path):
    for fsync in (True, False):
        w = JournalWriter(tmp_path / f"j{fsync}", fsync=fsync)
        w.append("a", [(1, {"x": 1}), (2, {"x": 2})])
        w.end("a")
        w.close()
    assert (tmp_path / "jTrue/a/log.jsonl").read_bytes() == (tmp_path / "jFalse/a/log.jsonl").read_bytes()
    assert jf.read_head(tmp_path / "jTrue") == 3


def test_chunk_info_counts_lines_and_non_blank_ones():
    assert js.chunk_info(b"a\nb\n") == (2, 2)
    assert js.chunk_info(b"a\n\nb") == (3, 2)
    assert js.chunk_info(b"\n\na\n") == (3, 1)
    assert js.chunk_info(b"a\r\n \r\n\t\nb\n") == (4, 2)


# ---------------------------------------------------------------- through a topology


@pytest.fixture
def topo(tmp_path):
    t = Topology("t1", Ctx(tmp_path / "data"), query_starter=start_local)
    yield t
    t.stop()


@pytest.mark.parametrize("interval", ["", ', interval = "1ns"'])
def test_bad_lines_reach_dropped_tuples(topo, tmp_path, small_chunks, interval):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    texts = [json.dumps({"i": i}) if i % 7 else "oops" for i in range(1, 40)]
    src.write_text("\n".join(texts) + "\n")
    drops = []
    topo.subscribe_dropped(drops.append)
    run(topo, f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}"{interval};
        CREATE STREAM x AS SELECT RSTREAM i FROM s [RANGE 1 TUPLES];
        CREATE SINK k TYPE file WITH path = "{out}";
        INSERT INTO k FROM x;
        RESUME SOURCE s;""")
    good = [{"i": i} for i in range(1, 40) if i % 7]
    assert wait_until(lambda: topo.node("stream", "x")["state"] == "stopped" and len(drops) == 5, 20)
    assert topo.node("source", "s")["status"]["output_stats"]["num_sent_total"] == (39 if not interval else 34)
    topo.stop()
    assert lines(out) == good
    errors = sorted(drops, key=lambda d: int(d["error"].split(":")[2]))
    for d, n in zip(errors, (7, 14, 21, 28, 35)):
        assert d["error"].startswith(f"file source: {src}:{n}: cannot parse a line: invalid JSON")
        assert d["data"] is None
    assert {(d["node_type"], d["node_name"], d["event_type"]) for d in drops} == {("source", "s", "input")}


def test_paused_source_journals_nothing_until_resume(topo, tmp_path, small_chunks):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(200)))
    run(topo, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";')
    head = topo.journal.head
    assert head == 0
    for p in parse_script("RESUME SOURCE s;"):
        topo.execute(p)
    assert wait_until(lambda: topo.node("source", "s")["state"] == "stopped", 10)
    assert topo.journal.head == 201  # 200 lines + the end marker


def test_stopped_mid_file_resumes_after_the_last_segment(tmp_path, small_chunks, monkeypatch):
    """A server stopped while its file source is half-way (no end marker) resumes that source after its
    last journaled segment: the journal holds every line once, in order."""
    import threading

    from sbpy.server import persistence
    from sbpy.server.manager import TopologyManager
    from sbpy.server.nodes import source_node

    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(100)))
    real = source_node.SourceContext.emit_segment
    held, calls = threading.Event(), []

    def emit_segment(ctx, seg):  # the first run stops after 3 segments, as a stop mid-file does
        calls.append(seg)
        if not held.is_set() and len(calls) > 3:
            held.set()
            while not ctx.stopping:
                ctx.sleep(0.01)
            raise source_node.SourceStopped()
        real(ctx, seg)

    monkeypatch.setattr(source_node.SourceContext, "emit_segment", emit_segment)

    def manager():
        m = TopologyManager(Ctx(tmp_path / "data"),
                            topology_factory=lambda name, ctx: Topology(name, ctx, query_starter=start_local))
        persistence.install(m)
        return m

    m = manager()
    t = m.create("t")
    m.run_script(t, f'CREATE SOURCE s TYPE file WITH path = "{src}";')
    assert wait_until(held.is_set, 10)
    m.stop_all()
    sent = sum(seg["n"] for seg in calls[:3])
    assert not t.journal.ended("s") and t.journal.head == sent and 0 < sent < 100

    m = manager()
    persistence.restore(m)
    t = m.get("t")
    assert wait_until(lambda: t.node("source", "s")["state"] == "stopped", 10)
    stats = t.node("source", "s")["status"]["output_stats"]
    # nothing reads s: lines emitted once the replay has ended are destinationless (num_dropped,
    # drop_log.py); the restored count and the lines emitted during the replay are sent
    assert stats["num_sent_total"] + stats["num_dropped"] == 100 and stats["num_sent_total"] >= sent
    assert calls[4]["start"] == calls[2]["end"]  # resumed after the last journaled segment
    rows = jf.read_entries(t.journal.dir, ["s"], 0, t.journal.head)
    m.stop_all()
    assert [r[0] for r in rows] == list(range(1, 102))  # 100 lines and the end marker
    assert [jf.decode_data(r[3]) for r in rows[:-1]] == [{"i": i} for i in range(100)]


def test_rewindable_and_interval_sources_copy_their_tuples(tmp_path):
    """A rewindable file may be rewritten before REWIND while its earlier lines are still unread, and an
    ``interval`` paces single tuples: both journal copies, never segments."""
    path = _file(tmp_path, ['{"i": 1}', "oops", '{"i": 2}'])

    class TupleCtx:
        skip, resume, stopping = 0, None, False

        def __init__(self):
            self.out, self.dropped = [], []

        def emit(self, data, ts=None):
            self.out.append(data)

        def emit_segment(self, seg):
            raise AssertionError("no segment expected")

        def report_dropped(self, error, data=None):
            self.dropped.append(error)

        def flush(self):
            pass

        def sleep(self, seconds):
            return True

        def rewind_requested(self):
            return False

        def wait_for_rewind(self):
            return False

    for params in ({"rewindable": True}, {"interval": "1ns"}):
        ctx = TupleCtx()
        FileSource({"path": str(path), **params}).run(ctx)
        assert ctx.out == [{"i": 1}, {"i": 2}]
        assert len(ctx.dropped) == 1 and ctx.dropped[0].startswith(f"file source: {path}:2: cannot parse a line")


def test_bad_lines_are_reported_once_with_several_consumers(topo, tmp_path, small_chunks):
    src = tmp_path / "in.jsonl"
    src.write_text('{"i": 1}\noops\n{"i": 2}\n[3]\n')
    drops = []
    topo.subscribe_dropped(drops.append)
    run(topo, f"""
        CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
        CREATE SINK k1 TYPE file WITH path = "{tmp_path}/k1.jsonl";
        CREATE SINK k2 TYPE file WITH path = "{tmp_path}/k2.jsonl";
        INSERT INTO k1 FROM s;
        INSERT INTO k2 FROM s;
        RESUME SOURCE s;""")

    def done(c):  # the local runner's query handled every batch up to HEAD (drops are reported last)
        h = c.handle
        return c.last_batch is not None and (h is None or (h.batch == c.last_batch + 1
                                                           and h.pos == topo.journal.head))

    assert wait_until(lambda: topo.node("source", "s")["state"] == "stopped"
                      and done(topo.consumers["k1"]) and done(topo.consumers["k2"]), 10)
    topo.stop()
    assert len(lines(tmp_path / "k1.jsonl")) == len(lines(tmp_path / "k2.jsonl")) == 2
    assert sorted(d["error"].split(": ", 2)[1] for d in drops) == [f"{src}:2", f"{src}:4"]
