"""Built-in sink types: ``stdout`` and ``file``.

A sink type is a class built from its WITH parameters (folded BQL values; unknown ones ignored, bad
types raise ``ValueError``, which fails CREATE SINK). The topology calls, from Spark's foreachBatch
thread (one call at a time per sink)::

    sink.write(tuples, batch=(query_id, batch_id))   # tuples: list of BQL maps, in order
    sink.close()                                     # DROP SINK / topology deleted: flush and close

``batch`` identifies a micro-batch; a batch Spark replays after a crash arrives again with the same
id. The ``file`` sink makes that exactly-once: ``<path>.sbpy-commit`` records, after every write, the
file size and the last batch id per query; a batch already recorded is skipped and anything past the
recorded size (a torn write: a partial line, NUL bytes) is cut off when a restored sink opens and before
every write. The rows are fsynced before the record that commits them, the record is replaced through a
fsynced temp file and the folder is fsynced (the entries of new and renamed files).
``recovering=True`` (a topology
restored at server start) keeps the file even with ``truncate = true``. The path must lie under the
server's file roots (``paths.allowed_path``), checked before any folder is created or file truncated;
rotation lists the backups it makes in ``<path>.sbpy-backups`` and prunes only those.
"""
from __future__ import annotations

import datetime as _dt
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
from sbpy.bql.durable import fsync_dir
from sbpy.bql.jsonio import JsonLines, to_json_bytes

from .paths import allowed_path

COMMIT_SUFFIX = ".sbpy-commit"
BACKUPS_SUFFIX = ".sbpy-backups"


def _number(params: dict[str, Any], name: str) -> float | None:
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number")
    if value < 0:
        raise ValueError(f"{name} must not be negative")
    return float(value)


class StdoutSink:
    """``stdout``: one compact JSON object per line."""

    def __init__(self, params: dict[str, Any], recovering: bool = False):
        self.lock = threading.Lock()

    def write(self, tuples: list[dict[str, Any]], batch: tuple[str, int] | None = None) -> None:
        if not tuples:
            return
        text = b"".join(to_json_bytes(t) + b"\n" for t in tuples).decode("utf-8")
        with self.lock:
            sys.stdout.write(text)
            sys.stdout.flush()

    def close(self) -> None:
        sys.stdout.flush()


class FileSink:
    """``file``: ``path`` (required), ``truncate`` (default false: append), rotation by ``max_size``
    (MB) with ``max_age`` (days) and ``max_backups``; one JSON object per line, exactly once."""

    def __init__(self, params: dict[str, Any], recovering: bool = False):
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise ValueError("path parameter is missing" if path is None else "path must be a string")
        truncate = params.get("truncate", False)
        if not isinstance(truncate, bool):
            raise ValueError("truncate must be a bool")
        self.max_size = _number(params, "max_size")
        self.max_age = _number(params, "max_age")
        backups = params.get("max_backups")
        if backups is not None and (isinstance(backups, bool) or not isinstance(backups, int) or backups < 0):
            raise ValueError("max_backups must be a non-negative integer")
        self.max_backups = backups
        self.path = Path(allowed_path(path, "sink"))  # resolved and under the server's file roots
        self.commit_path = Path(str(self.path) + COMMIT_SUFFIX)
        self.backups_path = Path(str(self.path) + BACKUPS_SUFFIX)
        self.lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if truncate and not recovering:
            self.path.write_bytes(b"")
            self.commit_path.unlink(missing_ok=True)
        # a new sink (not a restored one) starts a fresh commit record: batch ids restart with new queries
        self.commit = self._read_commit() if recovering else None
        self.f = open(self.path, "ab")
        if self.commit is None:
            self.commit = {"size": self.f.tell(), "batches": {}}
            self._write_commit()

    # ------------------------------------------------------------ commit file

    def _read_commit(self) -> dict[str, Any] | None:
        try:
            doc = orjson.loads(self.commit_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("size"), int):
            return None
        doc.setdefault("batches", {})
        self._cut_torn_tail(doc)
        return doc

    def _cut_torn_tail(self, doc: dict[str, Any]) -> None:
        """Recovery: anything past the committed size (a partial line, NUL bytes a crash left in a file
        extended but not written) is cut off at once, so the file holds exactly the committed rows."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size > doc["size"]:
            with open(self.path, "r+b") as f:
                f.truncate(doc["size"])
                os.fsync(f.fileno())
        elif size < doc["size"]:  # committed rows were lost under the sink (not by a crash: they are fsynced)
            logging.getLogger("sbpy.sinks").error("file sink %s: %d committed bytes are missing", self.path,
                                                  doc["size"] - size)
            doc["size"] = size

    def _write_commit(self) -> None:
        """Replace the commit record atomically and durably: temp file, fsync, rename, fsync of the
        folder (which also makes a newly created or rotated data file's entry durable)."""
        tmp = self.commit_path.with_name(self.commit_path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(orjson.dumps(self.commit))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.commit_path)
        fsync_dir(self.commit_path.parent)

    # ------------------------------------------------------------ writing

    def write(self, tuples: list[dict[str, Any]], batch: tuple[str, int] | None = None) -> None:
        self._append([b"".join(to_json_bytes(t) + b"\n" for t in tuples)], batch)

    takes_json_text = True  # ``write_json_lines`` also takes a ``JsonLines`` (written as it is)

    def write_json_lines(self, lines: list[str] | JsonLines, batch: tuple[str, int] | None = None) -> None:
        """``write`` for tuples already encoded as ``sbpy.bql.jsonio.to_json`` text (one per line): the
        stateless execution encodes them on the executors, so the driver only appends."""
        if isinstance(lines, JsonLines):
            self._append(lines.parts, batch)  # the text's pieces as they are: no joined copy
            return
        self._append([("\n".join(lines) + "\n").encode("utf-8")] if lines else [], batch)

    def _append(self, parts: list[Any], batch: tuple[str, int] | None) -> None:
        """Append the bytes of ``parts`` (bytes-like, in order) as one durable write of batch ``batch``."""
        with self.lock:
            if self.f is None:
                raise RuntimeError("the sink is closed")
            if batch is not None:
                query_id, batch_id = batch
                if self.commit["batches"].get(query_id, -1) >= batch_id:
                    return  # a replayed batch that was fully written
            if self.f.tell() != self.commit["size"]:  # a torn write before a crash
                self.f.truncate(self.commit["size"])
                self.f.seek(self.commit["size"])
            for part in parts:
                self.f.write(part)
            self.f.flush()
            os.fsync(self.f.fileno())  # the rows are durable before the record that commits them
            self.commit["size"] = self.f.tell()
            if batch is not None:
                self.commit["batches"][batch[0]] = batch[1]
            self._write_commit()
            if self.max_size and self.commit["size"] > self.max_size * 1024 * 1024:
                self._rotate()

    def _rotate(self) -> None:
        """Move the file to ``<name>-<UTC time><ext>`` and start a new one (lumberjack's naming)."""
        self.f.close()
        now = _dt.datetime.now(_dt.timezone.utc)
        stem, ext = os.path.splitext(self.path.name)
        backup = self.path.with_name(f"{stem}-{now.strftime('%Y-%m-%dT%H-%M-%S')}.{now.microsecond // 1000:03d}{ext}")
        # listed before the rename: a crash in between leaves a listed name that does not exist (skipped),
        # never a backup of ours that pruning would not know
        self._write_backups(self._read_backups() + [backup.name])
        os.replace(self.path, backup)
        self.f = open(self.path, "ab")
        self.commit["size"] = 0
        self._write_commit()
        self._prune()

    def _read_backups(self) -> list[str]:
        """The names of the backups this sink made (``<path>.sbpy-backups``), oldest first."""
        try:
            names = orjson.loads(self.backups_path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return []
        return [n for n in names if isinstance(n, str) and "/" not in n] if isinstance(names, list) else []

    def _write_backups(self, names: list[str]) -> None:
        tmp = self.backups_path.with_name(self.backups_path.name + ".tmp")
        tmp.write_bytes(orjson.dumps(names))
        os.replace(tmp, self.backups_path)
        fsync_dir(self.path.parent)

    def _prune(self) -> None:
        """Delete the backups over ``max_backups`` or older than ``max_age`` days — only files this
        sink's rotation made, never other files of the folder that look alike."""
        backups = sorted(n for n in self._read_backups() if (self.path.parent / n).exists())
        doomed: set[str] = set()
        if self.max_backups:
            doomed.update(backups[:-self.max_backups])
        if self.max_age:
            limit = _dt.datetime.now().timestamp() - self.max_age * 86400
            doomed.update(n for n in backups if (self.path.parent / n).stat().st_mtime < limit)
        for name in doomed:
            (self.path.parent / name).unlink(missing_ok=True)
        self._write_backups([n for n in backups if n not in doomed])

    def close(self) -> None:
        with self.lock:
            if self.f is not None:
                self.f.flush()
                os.fsync(self.f.fileno())
                self.f.close()
                self.f = None


SINK_TYPES: dict[str, type] = {"stdout": StdoutSink, "file": FileSink}
