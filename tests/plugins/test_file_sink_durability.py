"""The ``file`` sink's durability: rows are fsynced before the commit record that names them, the record
and the folder are fsynced, and a restored sink cuts a torn tail (NUL bytes, a partial line) at once,
keeping every committed row."""
from __future__ import annotations

import json
import os

from sbpy.plugins.builtin import sinks
from sbpy.plugins.builtin.sinks import COMMIT_SUFFIX, FileSink


def _rows(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_torn_tail_of_nul_bytes_is_cut_when_restored(tmp_path):
    p = tmp_path / "out.jsonl"
    s = FileSink({"path": str(p)})
    s.write([{"a": i} for i in range(7)], batch=("q", 0))
    s.f.close()  # a crash: the file was extended but its last block never written
    with open(p, "ab") as f:
        f.write(b"\0" * 100)
    restored = FileSink({"path": str(p)}, recovering=True)
    assert _rows(p) == [{"a": i} for i in range(7)]  # cut at once, before any write
    restored.write([{"a": 7}], batch=("q", 1))
    restored.write([{"a": 7}], batch=("q", 1))  # replayed
    restored.close()
    assert _rows(p) == [{"a": i} for i in range(8)]


def test_partial_line_is_cut_and_the_batch_rewritten(tmp_path):
    p = tmp_path / "out.jsonl"
    s = FileSink({"path": str(p)})
    s.write([{"a": 1}], batch=("q", 0))
    s.f.close()
    with open(p, "ab") as f:
        f.write(b'{"a": 2}\n{"a": 3')  # batch 1 torn before its commit record
    restored = FileSink({"path": str(p)}, recovering=True)
    assert p.read_bytes() == b'{"a":1}\n'
    restored.write([{"a": 2}, {"a": 3}], batch=("q", 1))
    restored.close()
    assert _rows(p) == [{"a": 1}, {"a": 2}, {"a": 3}]


def test_rows_are_fsynced_before_their_commit_record(tmp_path, monkeypatch):
    p = tmp_path / "out.jsonl"
    s = FileSink({"path": str(p)})
    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(a, b):
        events.append(("replace", str(b)))
        real_replace(a, b)

    monkeypatch.setattr(sinks.os, "fsync", fsync)
    monkeypatch.setattr(sinks.os, "replace", replace)
    s.write([{"a": 1}], batch=("q", 0))
    s.close()
    commit = str(p) + COMMIT_SUFFIX
    assert events[:4] == [("fsync", str(p)), ("fsync", commit + ".tmp"), ("replace", commit),
                          ("fsync", str(tmp_path))]
    assert json.loads(open(commit).read())["batches"] == {"q": 0}
