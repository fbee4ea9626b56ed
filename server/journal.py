"""The driver-side journal writer of one topology.

Every tuple a source emits (and every output of a stream computed by its own query) is appended to
that node's log with a topology-wide, strictly increasing sequence number, so ``seq`` order is the
arrival order across all inputs; the ``file`` source journals whole chunks of its file by reference
(``append_segment``: one entry, one seq per line; ``append_segments``: several entries, and the end
marker after them, in one commit). Each append is one commit: one write, then (with
``fsync``, the default) an fsync of the log, then HEAD (atomic temp file + ``os.replace``, the temp file
and the folder synced); Spark readers only read entries with ``seq <= HEAD``.

The encoder, the file layout and HEAD live in ``sbpy.bql.spark.journal_format`` (segments in
``journal_segments``); this module only adds the single writer (one lock per topology), the per-node
counters and resume positions of a source after a restart, end markers, the recovery of a log's
torn or NUL-filled tail after a crash, and the bounded size of the logs:

- **Rolling.** A node's log is a sequence of files (``journal_format.log_files``): once the current file
  holds ``roll_bytes`` (default: ``$SBPY_JOURNAL_ROLL_BYTES``, else ``ROLL_BYTES``, 16 MiB) the next
  commit starts ``log-<its first seq>.jsonl``.
- **Pruning** (``prune(floor)``): every file of a node but its newest whose entries all have seqs
  <= ``floor`` is deleted; ``floor`` is the lowest position any consumer may still read after
  (``server/journal_prune.py`` computes it from the consumers' checkpoints). What the files told the
  writer (tuples counted, the last file segment) is first written to ``pruned.json``, so a restarted
  writer (a source's ``skip``, a file source's resume segment) is unaffected; a crash between that
  record and the deletions is finished by the recovery.
- **Backlog** (``backlog(node, after_seq)``): how many of a node's tuples have seqs > ``after_seq``
  (the WAIT backpressure of ``nodes/backpressure.py``), from per-commit marks.
- **History** (``retain(node, n)``): the node's log keeps at least its last ``n`` tuples for ``table()``
  (a source's ``history`` parameter, ``server/history.py``): ``prune`` never goes above the newest mark
  that leaves ``n`` tuples after it (``history_floor``), and ``pin_history`` holds a reader's range while
  it reads (``unpin``).

Example::

    w = JournalWriter(journal_dir)
    w.append("src", [(ts_us, {"a": 1}), (ts_us, {"a": 2})])   # -> last seq
    w.append_segment("f", ts_us, seg)                          # seg: journal_segments.make_segment
    w.append_segments("f", [(ts_us, seg2), (ts_us, seg3)], end=True)  # one commit, the end marker last
    w.end("src")
"""
from __future__ import annotations

import bisect
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from sbpy.bql.durable import fsync_dir
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js

log = logging.getLogger("sbpy.journal")

ROLL_BYTES = 16 << 20  # a node log file is closed and a new one started once it holds this many bytes
ROLL_BYTES_ENV = "SBPY_JOURNAL_ROLL_BYTES"  # overrides ROLL_BYTES (tests and tuning: small files prune early)
PRUNE_EVERY = 0.5  # seconds: ``prune_due`` is true at most this often
_MARK_EVERY = 256  # tuples between two backlog marks of a recovered log
INF = float("inf")


@dataclass
class _Part:
    """One file of a node's log: the seq its name gives, the last entry's seq (0: none), the tuples it
    holds, its last file segment, its size in bytes."""

    first: int
    path: Path
    last: int = 0
    count: int = 0
    segment: dict[str, Any] | None = None
    size: int = 0
    ended: bool = False  # holds the node's end marker


class JournalWriter:
    """Appends entries to node logs under ``journal_dir``; thread-safe. ``fsync``: every commit is
    durable (log, HEAD's temp file and the folder are synced) before it is visible."""

    def __init__(self, journal_dir: str | os.PathLike[str], fsync: bool = True, roll_bytes: int | None = None):
        self.dir = Path(journal_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.roll_bytes = int(roll_bytes or os.environ.get(ROLL_BYTES_ENV) or ROLL_BYTES)
        self._lock = threading.Lock()
        self._files: dict[str, Any] = {}  # node -> its newest file, open for appending
        self._parts: dict[str, list[_Part]] = {}  # node -> the files of its log, oldest first
        self._counts: dict[str, int] = {}  # tuples per node log (a segment counts its non-blank lines)
        self._segments: dict[str, dict[str, Any]] = {}  # node -> its last segment (a file source's position)
        # node -> backlog marks (last seq, tuples up to it, tuples with the consecutive seqs up to it), ascending
        self._marks: dict[str, list[tuple[int, int, int]]] = {}
        self._ended: set[str] = set()
        self._retain: dict[str, int] = {}  # node -> tuples its log keeps for table() (``retain``)
        self._pins: dict[int, tuple[str, int]] = {}  # pin id -> (node, the seq its reader reads after)
        self._pin_ids = 0
        self._batches: dict[str, list] = jf.read_head_batches(self.dir)  # node -> [query key, batch id]
        self._next_prune = 0.0
        self.pruned_bytes = 0  # bytes of log files deleted by ``prune`` since the start
        self._seq = self._recover()

    # ------------------------------------------------------------ recovery

    def _recover(self) -> int:
        """Scan existing logs: per-node counts, last segments, end markers, and the last seq. Entries
        beyond HEAD are cut off (no reader has seen them and their source will emit them again), and so
        is a torn or NUL-filled tail a crash left (an fsynced journal never has one before HEAD); a file
        left with no entry past its first seq is removed, and so is a file ``pruned.json`` covers (a
        crash interrupted ``prune``)."""
        head = jf.read_head(self.dir)
        for node_dir in sorted(p for p in self.dir.iterdir() if p.is_dir()):
            node = node_dir.name
            pruned = jf.read_pruned(node_dir)
            files = jf.log_files(node_dir)
            parts: list[_Part] = []
            count, segment, ended = pruned["count"], pruned["segment"], False
            marks: list[tuple[int, int, int]] = [(pruned["seq"], count, 0)]
            for k, (first, path) in enumerate(files):
                part, part_marks = self._scan(path, first, head)
                covered = part.last <= pruned["seq"] and pruned["seq"] > 0 and k + 1 < len(files)
                if covered or (first > 0 and part.last == 0):
                    path.unlink(missing_ok=True)
                    continue
                parts.append(part)
                marks += [(seq, count + n, 0) for seq, n in part_marks]
                count += part.count
                if part.segment is not None:
                    segment = part.segment
                ended = ended or part.ended
            if not files and not pruned["count"] and pruned["segment"] is None:
                continue
            self._parts[node] = parts
            self._counts[node] = count
            self._marks[node] = marks
            if segment is not None:
                self._segments[node] = segment
            if ended:
                self._ended.add(node)
        return head

    def _scan(self, path: Path, first: int, head: int) -> tuple[_Part, list[tuple[int, int]]]:
        """Recover one log file (cut its tail beyond HEAD or torn) and describe it, with backlog marks
        ``(seq, tuples of the file up to it)`` every ``_MARK_EVERY`` tuples and at its end."""
        part = _Part(first, path)
        marks: list[tuple[int, int]] = []
        good, since_mark = 0, 0
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
                part.last = last
                part.ended = part.ended or bool(end)
                n = 0 if end else int(seg["k"]) if seg is not None else 1
                if seg is not None:
                    part.segment = seg
                part.count += n
                since_mark += n
                if since_mark >= _MARK_EVERY:
                    marks.append((last, part.count))
                    since_mark = 0
        if good != path.stat().st_size:
            with open(path, "r+b") as f:
                f.truncate(good)
                if self.fsync:
                    os.fsync(f.fileno())
        part.size = good
        if part.last:
            marks.append((part.last, part.count))
        return part, marks

    # ------------------------------------------------------------ writing

    @property
    def head(self) -> int:
        """The last committed seq."""
        return self._seq

    def _file(self, node: str, first: int) -> Any:
        """``node``'s newest log file, open for appending; a commit starting at seq ``first`` starts a
        new file when the newest holds ``roll_bytes`` (or the node has none yet)."""
        parts = self._parts.setdefault(node, [])
        f = self._files.get(node)
        if parts and parts[-1].size >= self.roll_bytes and parts[-1].last:
            if f is not None:
                f.close()
            f = None
            parts.append(_Part(first, jf.rolled_log_path(self.dir, node, first)))
        elif not parts:
            parts.append(_Part(0, jf.node_log_path(self.dir, node)))
        if f is None:
            path = parts[-1].path
            created = not path.parent.exists()
            path.parent.mkdir(parents=True, exist_ok=True)
            new_file = not path.exists()
            f = open(path, "ab")
            self._files[node] = f
            if self.fsync and created:  # the new log's folder entry is durable before HEAD names it
                fsync_dir(self.dir)
            elif self.fsync and new_file:
                fsync_dir(path.parent)
        return f

    def _commit(self, node: str, text: str, first: int, seq: int, tuples: int,
                entries: list[tuple[int, int, int]] | None = None) -> None:
        """Write ``text`` (whole lines, seqs ``first .. seq``, ``tuples`` tuples) to ``node``'s log, sync
        it, then move HEAD to ``seq``. ``entries``: ``(first seq, last seq, tuples)`` of each entry when
        the commit holds several segments (a backlog mark each, so a reader inside the commit is
        counted as exactly as after one-segment commits); default one mark for the whole commit."""
        f = self._file(node, first)
        data = text.encode("utf-8")
        f.write(data)
        f.flush()
        if self.fsync:
            os.fsync(f.fileno())
        jf.write_head(self.dir, seq, self._batches, sync=self.fsync)
        self._seq = seq
        part = self._parts[node][-1]
        part.size += len(data)
        part.last = seq
        part.count += tuples
        count = self._counts.get(node, 0)
        self._counts[node] = count + tuples
        marks = self._marks.setdefault(node, [])
        for e_first, e_last, e_tuples in entries if entries is not None else [(first, seq, tuples)]:
            if e_tuples:
                count += e_tuples
                marks.append((e_last, count, e_tuples if e_last - e_first + 1 == e_tuples else 0))

    def append(self, node: str, items: Iterable[tuple[int, Any]], batch: tuple[str, int] | None = None) -> int:
        """Append ``(ts_us, data)`` items to ``node``'s log, commit them (HEAD) and return the last seq.

        ``batch`` = ``(query key, batch id)`` of the micro-batch that computed the items (a stream's own
        query): a batch already appended (replayed after a crash) is skipped."""
        return self._append(node, items, batch, jf.encode_entry)

    def append_encoded(self, node: str, items: Iterable[tuple[int, str]],
                       batch: tuple[str, int] | None = None) -> int:
        """``append`` of ``(ts_us, text)`` items whose data is already ``journal_format.encode_data``'s
        text (a driver query's ``out`` rows: ``TupleBatch`` with ``encoded``), written as it is."""
        return self._append(node, items, batch, jf.encode_entry_text)

    def _append(self, node: str, items: Iterable[tuple[int, Any]], batch: tuple[str, int] | None,
                encode: Any) -> int:
        with self._lock:
            last = self._batches.get(node)
            if batch is not None and last is not None and last[0] == batch[0] and int(last[1]) >= batch[1]:
                return self._seq  # also after the node's end: the replay of the batch that ended it
            if node in self._ended:
                raise ValueError(f"node '{node}' has already ended")
            seq = self._seq
            lines = []
            for ts_us, data in items:
                seq += 1
                lines.append(encode(seq, ts_us, data))
            if not lines:
                return self._seq
            if batch is not None:
                self._batches[node] = [batch[0], int(batch[1])]
            self._commit(node, "\n".join(lines) + "\n", self._seq + 1, seq, len(lines))
            return seq

    def append_segment(self, node: str, ts_us: int, seg: dict[str, Any]) -> int:
        """Journal one file segment (``journal_segments.make_segment``) of ``seg["n"]`` lines: it takes
        the next ``n`` seqs; commits and returns the last one."""
        with self._lock:
            if node in self._ended:
                raise ValueError(f"node '{node}' has already ended")
            first = self._seq + 1
            self._commit(node, js.encode_segment(first, ts_us, seg) + "\n", first, js.last_seq(first, seg),
                         int(seg["k"]))
            self._segments[node] = seg
            self._parts[node][-1].segment = seg
            return self._seq

    def append_segments(self, node: str, segments: list[tuple[int, dict[str, Any]]],
                        end: bool = False) -> int:
        """Journal several file segments ``(ts_us, seg)`` in one commit (one write, one sync, one HEAD),
        each its own entry exactly as ``append_segment`` writes it; ``end``: the node's end marker
        follows them in the same commit. Returns the last seq. A reader sees all of them or none."""
        with self._lock:
            if node in self._ended:
                raise ValueError(f"node '{node}' has already ended")
            first = seq = self._seq + 1
            lines, entries = [], []
            for ts_us, seg in segments:
                lines.append(js.encode_segment(seq, ts_us, seg))
                entries.append((seq, js.last_seq(seq, seg), int(seg["k"])))
                seq = js.last_seq(seq, seg) + 1
            if end:
                lines.append(jf.encode_end(seq))
                seq += 1
            if not lines:
                return self._seq
            self._commit(node, "\n".join(lines) + "\n", first, seq - 1, sum(e[2] for e in entries), entries)
            if segments:
                self._segments[node] = segments[-1][1]
                self._parts[node][-1].segment = segments[-1][1]
            if end:
                self._parts[node][-1].ended = True
                self._ended.add(node)
            return self._seq

    def end(self, node: str) -> int | None:
        """Write ``node``'s end marker (once) and commit it; returns its seq (None if already ended)."""
        with self._lock:
            if node in self._ended:
                return None
            self._commit(node, jf.encode_end(self._seq + 1) + "\n", self._seq + 1, self._seq + 1, 0)
            self._parts[node][-1].ended = True
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

    def backlog(self, node: str, after_seq: int) -> int:
        """How many of ``node``'s tuples have seqs > ``after_seq``: exact for tuples appended in this run,
        an upper bound inside a file segment read only in part (it counts whole) and, after a restart,
        inside the ``_MARK_EVERY`` tuples between two recovered marks."""
        with self._lock:
            marks = self._marks.get(node) or []
            k = bisect.bisect_right(marks, (after_seq, INF, INF)) - 1  # the newest mark at or below
            done = marks[k][1] if k >= 0 else 0
            if k + 1 < len(marks):  # ``after_seq`` inside the next commit: its first tuples are taken
                last, _cum, span = marks[k + 1]
                if span and last - span < after_seq:
                    done += after_seq - (last - span)
            return self._counts.get(node, 0) - done

    def forget_marks(self, node: str, seq: int) -> None:
        """Drop backlog marks no reader will ask about (all positions are >= ``seq``): keep the newest
        mark at or below ``seq``."""
        with self._lock:
            marks = self._marks.get(node)
            seq = min(seq, self._history_floor(node))  # the history floor is computed from marks
            if marks:
                k = bisect.bisect_right(marks, (seq, INF, INF)) - 1
                if k > 0:
                    del marks[:k]

    # ------------------------------------------------------------ history (table())

    def retain(self, node: str, tuples: int) -> None:
        """Keep ``node``'s last ``tuples`` tuples in its log for ``table()`` (0: none, the default)."""
        with self._lock:
            if tuples > 0:
                self._retain[node] = int(tuples)
            else:
                self._retain.pop(node, None)

    def retained(self, node: str) -> int:
        """How many of its last tuples ``node``'s log keeps for ``table()`` (0: no history)."""
        return self._retain.get(node, 0)

    def history_floor(self, node: str) -> float:
        """The highest seq at and below which ``node``'s entries may be pruned without losing its
        retained tuples or a pinned reader's range: the newest backlog mark with at least ``retain``
        tuples after it (0 when none is old enough), INF for a node without history or pins."""
        with self._lock:
            return self._history_floor(node)

    def _history_floor(self, node: str) -> float:
        floor = min([INF] + [seq for n, seq in self._pins.values() if n == node])
        keep = self._retain.get(node)
        if not keep:
            return floor
        marks = self._marks.get(node) or []
        k = bisect.bisect_right(marks, self._counts.get(node, 0) - keep, key=lambda m: m[1]) - 1
        return min(floor, marks[k][0] if k >= 0 else 0)

    def pin_history(self, node: str) -> tuple[int, int, int]:
        """Start reading ``node``'s retained history: ``(pin id, after_seq, upto_seq)``; its entries with
        ``after_seq < seq <= upto_seq`` (HEAD now) hold its last ``retained(node)`` tuples (or all it
        has) and stay until ``unpin(pin id)``."""
        with self._lock:
            after = self._history_floor(node)
            after = 0 if after == INF else int(after)
            self._pin_ids += 1
            self._pins[self._pin_ids] = (node, after)
            return self._pin_ids, after, self._seq

    def unpin(self, pin: int) -> None:
        with self._lock:
            self._pins.pop(pin, None)

    def log_bytes(self) -> int:
        """The size of every node log (bytes), as the writer knows it."""
        with self._lock:
            return sum(p.size for parts in self._parts.values() for p in parts)

    # ------------------------------------------------------------ pruning

    def prune_due(self, force: bool = False) -> bool:
        """Whether ``prune`` may have work: some node has a closed file, and ``PRUNE_EVERY`` seconds
        passed since the last time this said yes (``force``: whenever)."""
        if not any(len(parts) > 1 for parts in list(self._parts.values())):
            return False
        now = time.monotonic()
        if now < self._next_prune and not force:
            return False
        self._next_prune = now + PRUNE_EVERY
        return True

    def prune(self, floors: dict[str, int], default: int) -> int:
        """Delete every file of a node's log but the newest whose entries all have seqs <= the node's
        floor (``floors[node]``, else ``default``: no reader of it reads at or below its floor any more);
        returns the bytes freed. ``pruned.json`` records what they held first (synced), then the files
        go (the folder synced)."""
        freed = 0
        with self._lock:
            for node, parts in self._parts.items():
                floor = min(floors.get(node, default), self._seq, self._history_floor(node))
                marks = self._marks.get(node)
                k = bisect.bisect_right(marks, (floor, INF, INF)) - 1 if marks else 0
                if k > 0:  # no reader asks for a backlog below its floor
                    del marks[:k]
                gone = []
                while len(parts) - len(gone) > 1 and parts[len(gone)].last <= floor:
                    gone.append(parts[len(gone)])
                if not gone:
                    continue
                node_dir = self.dir / node
                record = jf.read_pruned(node_dir)
                record["seq"] = max([record["seq"]] + [p.last for p in gone])
                record["count"] += sum(p.count for p in gone)
                for p in gone:
                    if p.segment is not None:
                        record["segment"] = p.segment
                self._write_pruned(node_dir, record)
                for p in gone:
                    p.path.unlink(missing_ok=True)
                    freed += p.size
                if self.fsync:
                    fsync_dir(node_dir)
                del parts[:len(gone)]
                log.debug("journal %s: pruned %d files up to seq %d", node_dir, len(gone), record["seq"])
        self.pruned_bytes += freed
        return freed

    def _write_pruned(self, node_dir: Path, record: dict[str, Any]) -> None:
        tmp = node_dir / f".{jf.PRUNED_FILE}.tmp"
        with open(tmp, "wb") as f:
            f.write(orjson.dumps(record))
            if self.fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, node_dir / jf.PRUNED_FILE)
        if self.fsync:
            fsync_dir(node_dir)

    def reset(self, node: str) -> None:
        """Forget ``node``'s log (a new node of that name starts a fresh log; seqs keep growing)."""
        with self._lock:
            f = self._files.pop(node, None)
            if f is not None:
                f.close()
            self._counts.pop(node, None)
            self._parts.pop(node, None)
            self._marks.pop(node, None)
            self._segments.pop(node, None)
            self._batches.pop(node, None)
            self._ended.discard(node)
            self._retain.pop(node, None)
            shutil.rmtree(self.dir / node, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()
