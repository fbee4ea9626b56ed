"""Built-in file source parameters and the exactly-once file sink."""
from __future__ import annotations

import datetime as dt

import pytest

from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.plugins.builtin.sinks import FileSink
from sbpy.plugins.builtin.sources import FileSource, parse_duration


class Ctx:
    """A source context that reads its segments back at once (as Spark would) and keeps the tuples."""

    def __init__(self, skip=0):
        self.skip, self.out, self.stopping, self.resume, self.dropped = skip, [], False, None, []

    def emit(self, data, ts=None):
        self.out.append((data, ts))

    def emit_segment(self, seg):
        for row in js.expand(1, 0, seg, "src", 0, seg["n"]):
            if row[3] is None:
                self.dropped.append(row[5])
            else:
                self.out.append((jf.decode_data(row[3]), jf.us_to_ts(row[2])))

    def report_dropped(self, error, data=None):
        self.dropped.append(error)

    def flush(self):
        pass

    def sleep(self, s):
        return True

    def rewind_requested(self):
        return False


def test_durations():
    assert parse_duration("100ms") == pytest.approx(0.1)
    assert parse_duration("1m30s") == 90
    assert parse_duration(2) == 2.0
    with pytest.raises(ValueError):
        parse_duration("abc")


def test_file_source_params_and_timestamps(tmp_path):
    f = tmp_path / "a.jsonl"
    f.write_text('{"t": 1, "x": 1}\n\nnot json\n{"t": "2015-04-10T10:23:00Z", "x": 2}\n')
    with pytest.raises(ValueError):
        FileSource({"path": str(f), "repeat": 1.5})
    with pytest.raises(ValueError):
        FileSource({"path": str(f), "rewindable": 1})
    ctx = Ctx()
    FileSource({"path": str(f), "timestamp_field": "t", "repeat": 1}).run(ctx)
    assert [d["x"] for d, _ in ctx.out] == [1, 2, 1, 2]
    assert ctx.out[0][1] == dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.timezone.utc)
    assert ctx.out[1][1] == dt.datetime(2015, 4, 10, 10, 23, tzinfo=dt.timezone.utc)
    assert len(ctx.dropped) == 2
    assert all(e.startswith(f"file source: {f}:3: cannot parse a line: invalid JSON") for e in ctx.dropped)
    ctx = Ctx(skip=3)  # per tuple (with interval): resumes after the tuples journaled before
    FileSource({"path": str(f), "repeat": 1, "interval": "1ns"}).run(ctx)
    assert [d["x"] for d, _ in ctx.out] == [2]
    assert len(ctx.dropped) == 1  # the bad line of the second pass (the first one's was reported before)


def test_file_sink_exactly_once(tmp_path):
    p = tmp_path / "out.jsonl"
    s = FileSink({"path": str(p)})
    s.write([{"a": 1}], batch=("q", 0))
    s.write([{"a": 1}], batch=("q", 0))  # replayed and already committed
    with open(p, "ab") as f:
        f.write(b'{"a": 2}\n{"a"')  # a torn write of batch 1 before a crash
    s.f.close()
    s = FileSink({"path": str(p), "truncate": True}, recovering=True)
    s.write([{"a": 2}], batch=("q", 1))
    s.close()
    assert p.read_text() == '{"a":1}\n{"a":2}\n'


def test_file_sink_truncate_and_rotation(tmp_path):
    p = tmp_path / "out.jsonl"
    p.write_text("old\n")
    s = FileSink({"path": str(p), "truncate": True, "max_size": 0.00001, "max_backups": 1})
    for i in range(3):
        s.write([{"i": i, "pad": "x" * 20}])
    s.close()
    backups = sorted(tmp_path.glob("out-*.jsonl"))
    assert len(backups) == 1 and "old" not in p.read_text()
