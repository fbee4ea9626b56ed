"""Where SAVE STATE puts a UDS and LOAD STATE finds it (``storage.uds`` in sensorbee.yaml).

``in_memory`` keeps ``topology → state → tag → bytes`` (lost on restart). ``fs`` stores
``<dir>/<topology>-<state>-<tag>.state``; a save first writes a temp file in ``temp_dir`` (default
``dir``) and renames it on commit, so a crash never leaves a torn state file. The content is whatever
the state's ``save`` wrote (no header).

    >>> import tempfile
    >>> storage = FsStorage(tempfile.mkdtemp())
    >>> with storage.save("t", "counter", "default") as w:
    ...     _ = w.write(b"42")
    >>> storage.load("t", "counter", "default").read()
    b'42'
    >>> storage.list("t")
    {'counter': ['default']}
"""
from __future__ import annotations

import io
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any, BinaryIO

from sbpy.bql.durable import fsync_dir
from sbpy.bql.errors import BQLExecutionError

_FILE = re.compile(r"^(.+)-(.+)-(.+)\.state$")


class NotSavedError(BQLExecutionError):
    """LOAD STATE of a state/tag that was never saved."""


class StateWriter:
    """A binary writer that becomes visible only on ``commit`` (``abort`` discards it). As a
    context manager it commits on success and aborts on an exception."""

    def __init__(self, f: BinaryIO, on_commit: Any, on_abort: Any):
        self.f = f
        self._commit, self._abort = on_commit, on_abort
        self.done = False

    def write(self, data: bytes) -> int:
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()

    def commit(self) -> None:
        """Make the written data the saved state; if that fails the temp data is discarded (and the
        previous saved state stays)."""
        if not self.done:
            self.done = True
            try:
                self._commit()
            except BaseException:
                self._abort()
                raise

    def abort(self) -> None:
        if not self.done:
            self.done = True
            self._abort()

    def __enter__(self) -> StateWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _check(kind: str, name: str) -> str:
    if not name or "-" in name and kind != "topology" or "/" in name or "\\" in name or name.startswith("."):
        raise BQLExecutionError(f"invalid {kind} name '{name}'")
    return name


class InMemoryStorage:
    """``in_memory``: saved states live in this process only."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, dict[str, bytes]]] = {}
        self._lock = threading.Lock()

    def save(self, topology: str, state: str, tag: str) -> StateWriter:
        buf = io.BytesIO()

        def commit() -> None:
            with self._lock:
                self._data.setdefault(topology, {}).setdefault(state, {})[tag] = buf.getvalue()

        return StateWriter(buf, commit, lambda: None)

    def load(self, topology: str, state: str, tag: str) -> BinaryIO:
        with self._lock:
            data = self._data.get(topology, {}).get(state, {}).get(tag)
        if data is None:
            raise NotSavedError(f"state '{state}' was not saved with tag '{tag}'")
        return io.BytesIO(data)

    def exists(self, topology: str, state: str, tag: str) -> bool:
        with self._lock:
            return tag in self._data.get(topology, {}).get(state, {})

    def list(self, topology: str) -> dict[str, list[str]]:
        with self._lock:
            return {s: sorted(tags) for s, tags in sorted(self._data.get(topology, {}).items())}

    def list_topologies(self) -> list[str]:
        with self._lock:
            return sorted(self._data)

    def delete(self, topology: str, state: str, tag: str) -> None:
        with self._lock:
            self._data.get(topology, {}).get(state, {}).pop(tag, None)


class FsStorage:
    """``fs``: ``<dir>/<topology>-<state>-<tag>.state``, written through a temp file in ``temp_dir``."""

    def __init__(self, dir: str | os.PathLike[str], temp_dir: str | os.PathLike[str] | None = None):
        self.dir = Path(dir)
        self.temp_dir = Path(temp_dir) if temp_dir is not None else self.dir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.temp_dir.mkdir(parents=True, exist_ok=True)

    def path(self, topology: str, state: str, tag: str) -> Path:
        _check("topology", topology)
        _check("state", state)
        _check("tag", tag)
        return self.dir / f"{topology}-{state}-{tag}.state"

    def save(self, topology: str, state: str, tag: str) -> StateWriter:
        target = self.path(topology, state, tag)
        fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=self.temp_dir)
        f = os.fdopen(fd, "wb")

        def commit() -> None:
            f.flush()
            os.fsync(f.fileno())
            f.close()
            os.replace(tmp, target)  # atomic when temp_dir is on the same file system
            fsync_dir(self.dir, missing_ok=True)

        def abort() -> None:
            f.close()
            Path(tmp).unlink(missing_ok=True)

        return StateWriter(f, commit, abort)

    def load(self, topology: str, state: str, tag: str) -> BinaryIO:
        try:
            return open(self.path(topology, state, tag), "rb")
        except FileNotFoundError:
            raise NotSavedError(f"state '{state}' was not saved with tag '{tag}'") from None

    def exists(self, topology: str, state: str, tag: str) -> bool:
        return self.path(topology, state, tag).is_file()

    def _entries(self) -> list[tuple[str, str, str]]:
        out = []
        for p in self.dir.iterdir():
            m = _FILE.match(p.name)
            if m and p.is_file():
                out.append((m.group(1), m.group(2), m.group(3)))
        return out

    def list(self, topology: str) -> dict[str, list[str]]:
        # topology names may contain '-', state and tag names cannot: split from the right
        found: dict[str, list[str]] = {}
        prefix = topology + "-"
        for p in self.dir.glob("*.state"):
            if not p.name.startswith(prefix):
                continue
            rest = p.name[len(prefix):-len(".state")]
            state, sep, tag = rest.rpartition("-")
            if sep and state and "-" not in state:
                found.setdefault(state, []).append(tag)
        return {s: sorted(t) for s, t in sorted(found.items())}

    def list_topologies(self) -> list[str]:
        return sorted({t for t, _, _ in self._entries()})

    def delete(self, topology: str, state: str, tag: str) -> None:
        self.path(topology, state, tag).unlink(missing_ok=True)


def storage_from_config(config: Any, base_dir: str | os.PathLike[str] | None = None) -> InMemoryStorage | FsStorage:
    """The storage of ``storage.uds`` (a ``Config``, its ``UDSStorageConfig`` or a plain dict).
    Relative ``dir`` / ``temp_dir`` are resolved against ``base_dir`` (or ``config.resolve``)."""
    uds = config
    for name in ("storage", "uds"):
        nxt = uds.get(name) if isinstance(uds, dict) else getattr(uds, name, None)
        if nxt is not None:
            uds = nxt
    kind = uds.get("type") if isinstance(uds, dict) else getattr(uds, "type", None)
    if kind in (None, "in_memory"):
        return InMemoryStorage()
    if kind != "fs":
        raise ValueError(f"unknown UDS storage type '{kind}'")
    params = uds.get("params") if isinstance(uds, dict) else getattr(uds, "params", None)
    params = params or {}
    get = params.get if isinstance(params, dict) else lambda k: getattr(params, k, None)
    if get("dir") is None:
        raise ValueError("params.dir is required for the 'fs' storage")

    def where(p: Any) -> Path | None:
        if p is None:
            return None
        p = Path(p)
        if p.is_absolute():
            return p
        if base_dir is not None:
            return Path(base_dir) / p
        resolve = getattr(config, "resolve", None)
        return Path(resolve(p)) if callable(resolve) else p

    return FsStorage(where(get("dir")), where(get("temp_dir")))
