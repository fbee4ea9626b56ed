"""The driver-side journal writer of one topology.

Every tuple a source emits (and every output of a stream computed by its own query) is appended to
that node's log with a topology-wide, strictly increasing sequence number, so ``seq`` order is the
arrival order across all inputs; the ``file`` source journals whole chunks of its file by reference
(``append_segment``: one entry, one seq per line). Each append is one commit: one write, then (with
``fsync``, the default) an fsync of the log, then HEAD (atomic temp file + ``os.replace``, the temp file
and the folder synced); Spark readers only read entries with ``seq <= HEAD``.

The encoder, the file layout and HEAD live in ``sbpy.bql.spark.journal_format`` (segments in
``journal_segments``); this module only adds the single writer (one lock per topology), the per-node
counters and resume positions of a source after a restart, end markers, and the recovery of a log's
torn or NUL-filled tail after a crash.

Example::

    w = JournalWriter(journal_dir)
    w.append("src", [(ts_us, {"a": 1}), (ts_us, {"a": 2})])   # -> last seq
    w.append_segment("f", ts_us, seg)                          # seg: journal_segments.make_segment
    w.end("src")
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sbpy.bql.durable import fsync_dir
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js

log = logging.getLogger("sbpy.journal")


class JournalWriter:
    """Appends entries to node logs under ``journal_dir``; thread-safe. ``fsync``: every commit is
    durable (log, HEAD's temp file and the folder are synced) before it is visible."""

    def __init__(self, journal_dir: str | os.PathLike[str], fsync: bool = True):
        self.dir = Path(journal_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}
        self._counts: dict[str, int] = {}  # tuples per node log (a segment counts its non-blank lines)
        self._segments: dict[str, dict[str, Any]] = {}  # node -> its last segment (a file source's position)
        self._ended: set[str] = set()
        self._batches: dict[str, list] = jf.read_head_batches(self.dir)  # node -> [query key, batch id]
        self._seq = self._recover()

    # ------------------------------------------------------------ recovery

    def _recover(self) -> int:
        """Scan existing logs: per-node counts, last segments, end markers, and the last seq. Entries
        beyond HEAD are cut off (no reader has seen them and their source will emit them again), and so
        is a torn or NUL-filled tail a crash left (an fsynced journal never has one before HEAD)."""
        head = jf.read_head(self.dir)
        for node_dir in sorted(p for p in self.dir.iterdir() if p.is_dir()):
            path = node_dir / jf.LOG_FILE
            if not path.exists():
                continue
            count, good = 0, 0
            ended = False
            segment = None
            with open(path, "rb") as f:
                for line in f:
                    if not line.endswith(b"\n"):
                        break
                    try:
                        _first, last, end, seg = jf.scan_entry(line)
                    except ValueError:  # torn or zero-filled by a crash (orjson's error is a ValueError)
                        log.warning("journal %s: cutting an unreadable tail at byte %d", path, good)
                        break
                    if last > head:
                        break
                    good += len(line)
                    if end:
                        ended = True
                    elif seg is not None:
                        count += int(seg["k"])
                        segment = seg
                    else:
                        count += 1
            if good != path.stat().st_size:
                with open(path, "r+b") as f:
                    f.truncate(good)
                    if self.fsync:
                        os.fsync(f.fileno())
            self._counts[node_dir.name] = count
            if segment is not None:
                self._segments[node_dir.name] = segment
            if ended:
                self._ended.add(node_dir.name)
        return head

    # ------------------------------------------------------------ writing

    @property
    def head(self) -> int:
        """The last committed seq."""
        return self._seq

    def _file(self, node: str) -> Any:
        f = self._files.get(node)
        if f is None:
            path = jf.node_log_path(self.dir, node)
            created = not path.parent.exists()
            path.parent.mkdir(parents=True, exist_ok=True)
            f = open(path, "ab")
            self._files[node] = f
            if self.fsync and created:  # the new log's folder entry is durable before HEAD names it
                fsync_dir(self.dir)
        return f

    def _commit(self, node: str, text: str, seq: int) -> None:
        """Write ``text`` (whole lines) to ``node``'s log, sync it, then move HEAD to ``seq``."""
        f = self._file(node)
        f.write(text.encode("utf-8"))
        f.flush()
        if self.fsync:
            os.fsync(f.fileno())
        jf.write_head(self.dir, seq, self._batches, sync=self.fsync)
        self._seq = seq

    def append(self, node: str, items: Iterable[tuple[int, Any]], batch: tuple[str, int] | None = None) -> int:
        """Append ``(ts_us, data)`` items to ``node``'s log, commit them (HEAD) and return the last seq.

        ``batch`` = ``(query key, batch id)`` of the micro-batch that computed the items (a stream's own
        query): a batch already appended (replayed after a crash) is skipped."""
        with self._lock:
            if node in self._ended:
                raise ValueError(f"node '{node}' has already ended")
            last = self._batches.get(node)
            if batch is not None and last is not None and last[0] == batch[0] and int(last[1]) >= batch[1]:
                return self._seq
            seq = self._seq
            lines = []
            for ts_us, data in items:
                seq += 1
                lines.append(jf.encode_entry(seq, ts_us, data))
            if not lines:
                return self._seq
            if batch is not None:
                self._batches[node] = [batch[0], int(batch[1])]
            self._commit(node, "\n".join(lines) + "\n", seq)
            self._counts[node] = self._counts.get(node, 0) + len(lines)
            return seq

    def append_segment(self, node: str, ts_us: int, seg: dict[str, Any]) -> int:
        """Journal one file segment (``journal_segments.make_segment``) of ``seg["n"]`` lines: it takes
        the next ``n`` seqs; commits and returns the last one."""
        with self._lock:
            if node in self._ended:
                raise ValueError(f"node '{node}' has already ended")
            first = self._seq + 1
            self._commit(node, js.encode_segment(first, ts_us, seg) + "\n", js.last_seq(first, seg))
            self._counts[node] = self._counts.get(node, 0) + int(seg["k"])
            self._segments[node] = seg
            return self._seq

    def end(self, node: str) -> int | None:
        """Write ``node``'s end marker (once) and commit it; returns its seq (None if already ended)."""
        with self._lock:
            if node in self._ended:
                return None
            self._commit(node, jf.encode_end(self._seq + 1) + "\n", self._seq + 1)
            self._ended.add(node)
            return self._seq

    # ------------------------------------------------------------ queries

    def count(self, node: str) -> int:
        """How many tuples ``node``'s log holds (a restarted source skips that many)."""
        return self._counts.get(node, 0)

    def last_segment(self, node: str) -> dict[str, Any] | None:
        """``node``'s last journaled file segment (a restarted ``file`` source resumes after its end)."""
        return self._segments.get(node)

    def ended(self, node: str) -> bool:
        return node in self._ended

    def reset(self, node: str) -> None:
        """Forget ``node``'s log (a new node of that name starts a fresh log; seqs keep growing)."""
        with self._lock:
            f = self._files.pop(node, None)
            if f is not None:
                f.close()
            self._counts.pop(node, None)
            self._segments.pop(node, None)
            self._batches.pop(node, None)
            self._ended.discard(node)
            shutil.rmtree(self.dir / node, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()
