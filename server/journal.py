"""The driver-side journal writer of one topology.

Every tuple a source emits (and every output of a stream computed by its own query) is appended to
that node's log with a topology-wide, strictly increasing sequence number, so ``seq`` order is the
arrival order across all inputs. After each append batch the writer flushes the log and moves HEAD
(atomic temp file + ``os.replace``); Spark readers only read entries with ``seq <= HEAD``.

The encoder, the file layout and HEAD live in ``sbpy.bql.spark.journal_format``; this module only adds
the single writer (one lock per topology), the per-node counters used to resume a source after a
restart, and end markers.

Example::

    w = JournalWriter(journal_dir)
    w.append("src", [(ts_us, {"a": 1}), (ts_us, {"a": 2})])   # -> last seq
    w.end("src")
"""
from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sbpy.bql.spark import journal_format as jf


class JournalWriter:
    """Appends entries to node logs under ``journal_dir``; thread-safe."""

    def __init__(self, journal_dir: str | os.PathLike[str]):
        self.dir = Path(journal_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}
        self._counts: dict[str, int] = {}  # data entries per node log
        self._ended: set[str] = set()
        self._batches: dict[str, list] = jf.read_head_batches(self.dir)  # node -> [query key, batch id]
        self._seq = self._recover()

    # ------------------------------------------------------------ recovery

    def _recover(self) -> int:
        """Scan existing logs: per-node counts, end markers, and the last seq (entries beyond HEAD are
        cut off, since no reader has seen them and their source will emit them again)."""
        head = jf.read_head(self.dir)
        last = head
        for node_dir in sorted(p for p in self.dir.iterdir() if p.is_dir()):
            path = node_dir / jf.LOG_FILE
            if not path.exists():
                continue
            count, good = 0, 0
            ended = False
            with open(path, "rb") as f:
                for line in f:
                    if not line.endswith(b"\n"):
                        break
                    entry = jf.decode_entry(line)
                    if entry["seq"] > head:
                        break
                    good += len(line)
                    if entry["end"]:
                        ended = True
                    else:
                        count += 1
            if good != path.stat().st_size:
                with open(path, "r+b") as f:
                    f.truncate(good)
            self._counts[node_dir.name] = count
            if ended:
                self._ended.add(node_dir.name)
        return last

    # ------------------------------------------------------------ writing

    @property
    def head(self) -> int:
        """The last committed seq."""
        return self._seq

    def _file(self, node: str) -> Any:
        f = self._files.get(node)
        if f is None:
            path = jf.node_log_path(self.dir, node)
            path.parent.mkdir(parents=True, exist_ok=True)
            f = open(path, "a", encoding="utf-8")
            self._files[node] = f
        return f

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
            f = self._file(node)
            seq = self._seq
            lines = []
            for ts_us, data in items:
                seq += 1
                lines.append(jf.encode_entry(seq, ts_us, data))
            if not lines:
                return self._seq
            f.write("\n".join(lines) + "\n")
            f.flush()
            if batch is not None:
                self._batches[node] = [batch[0], int(batch[1])]
            jf.write_head(self.dir, seq, self._batches)
            self._seq = seq
            self._counts[node] = self._counts.get(node, 0) + len(lines)
            return seq

    def end(self, node: str) -> int | None:
        """Write ``node``'s end marker (once) and commit it; returns its seq (None if already ended)."""
        with self._lock:
            if node in self._ended:
                return None
            f = self._file(node)
            self._seq += 1
            f.write(jf.encode_end(self._seq) + "\n")
            f.flush()
            jf.write_head(self.dir, self._seq, self._batches)
            self._ended.add(node)
            return self._seq

    # ------------------------------------------------------------ queries

    def count(self, node: str) -> int:
        """How many tuples ``node``'s log holds (a restarted source skips that many)."""
        return self._counts.get(node, 0)

    def ended(self, node: str) -> bool:
        return node in self._ended

    def reset(self, node: str) -> None:
        """Forget ``node``'s log (a new node of that name starts a fresh log; seqs keep growing)."""
        with self._lock:
            f = self._files.pop(node, None)
            if f is not None:
                f.close()
            self._counts.pop(node, None)
            self._batches.pop(node, None)
            self._ended.discard(node)
            shutil.rmtree(self.dir / node, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()
