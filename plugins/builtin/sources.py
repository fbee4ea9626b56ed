"""Built-in source types: ``file``, ``node_statuses``, ``edge_statuses``, ``dropped_tuples``.

A source type is a class built from its WITH parameters (already folded to BQL values; unknown ones
are ignored, bad types raise ``ValueError`` which fails CREATE SOURCE). The topology runs its
``run(ctx)`` on a driver thread; ``ctx`` (``sbpy.server.nodes.source_node.SourceContext``) offers::

    ctx.emit(data, ts=None)      # journal one tuple (blocks while paused, raises SourceStopped on stop)
    ctx.flush()                  # commit buffered tuples now
    ctx.sleep(seconds) -> bool   # interruptible; False when the source is stopping
    ctx.wait_for_rewind() -> bool
    ctx.rewind_requested() -> bool
    ctx.emit_segment(seg)        # journal a chunk of a file by reference (the ``file`` source)
    ctx.report_dropped(error)    # a tuple the source could not emit (reported on ``dropped_tuples``)
    ctx.skip                     # tuples journaled by an earlier run (resume position after a restart)
    ctx.resume                   # the last file segment journaled by an earlier run (or None)
    ctx.topology                 # the Topology (status sources)

``run`` returns when the source is done (a finite source then ends its journal log and stops).
Optional attributes: ``rewindable`` (REWIND SOURCE allowed), ``status()`` (the ``source`` part of
the node status).
"""
from __future__ import annotations

import datetime as _dt
import logging
import os
import queue
import re
import time
from typing import Any

from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.jsonio import from_json
from sbpy.bql.spark import journal_segments as js
from sbpy.bql.spark.journal_segments import compile_path, to_timestamp  # noqa: F401 - the file source's helpers
from sbpy.bql.spark.journal_segments import lookup as _lookup

from .paths import allowed_path

log = logging.getLogger("sbpy.source")

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DUR = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(value: Any, name: str = "interval") -> float:
    """Seconds of a duration parameter: int/float seconds or a Go duration string ("100ms", "1m30s")."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{name} must be a duration")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"{name} must not be negative")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text in ("0", ""):
            return 0.0
        pos, total = 0, 0.0
        for m in _DUR.finditer(text):
            if m.start() != pos:
                break
            total += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if pos == len(text):
            return total
    raise ValueError(f"{name} must be a duration, got {value!r}")


def _param(params: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = params.get(name, default)
    if value is default:
        return value
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ValueError(f"{name} must be a {_kind_name(kind)}")
    if not isinstance(value, kind):
        raise ValueError(f"{name} must be a {_kind_name(kind)}")
    return value


def _kind_name(kind: Any) -> str:
    names = {int: "integer", bool: "bool", str: "string", float: "float"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


CHUNK_BYTES = 4 << 20  # the file source journals its file in segments of about this size
_PACE_RECHECK_S = 0.2  # a paced file source re-reads its interval this often while it waits (UPDATE SOURCE)


def path_text(steps: list[str | int]) -> str:
    """The ``timestamp_field`` path text of compiled ``steps`` (``compile_path``'s inverse)."""
    out = []
    for s in steps:
        if isinstance(s, int):
            out.append(f"[{s}]")
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s):
            out.append(f".{s}" if out else s)
        else:
            out.append(f'["{s}"]')
    return "".join(out)


def json_lines(lines: Any, where: Any) -> Any:
    """``(line number, data or None, error or None)`` of each non-blank line of JSON-lines ``lines``
    (bytes, 1-based numbers): a JSON object is a tuple, anything else an error after ``where(n)``. The
    file source's reading of a line; the ``http`` source reads its request bodies with it too."""
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            data = from_json(line)
        except BQLEvaluationError as e:
            yield n, None, f"{where(n)}: cannot parse a line: {e}"
            continue
        if not isinstance(data, dict):
            yield n, None, f"{where(n)}: a line is not a JSON object"
            continue
        yield n, data, None


class FileSource:
    """``file``: JSON Lines from ``path``; see sensorbee-server.md section 3 for the parameters."""

    def __init__(self, params: dict[str, Any]):
        path = params.get("path")
        if not isinstance(path, str) or not path:
            raise ValueError("path parameter is missing" if path is None else "path must be a string")
        self.path = allowed_path(path, "source")  # resolved and under the server's file roots
        tsf = _param(params, "timestamp_field", str, None)
        self.ts_path = compile_path(tsf) if tsf else None
        self.interval = parse_duration(params["interval"]) if "interval" in params else 0.0
        self.repeat = _param(params, "repeat", int, 0)
        self.rewindable = _param(params, "rewindable", bool, False)
        self.waiting_for_rewind = False

    def status(self) -> dict[str, Any] | None:
        return {"waiting_for_rewind": self.waiting_for_rewind} if self.rewindable else None

    def journals_lines(self) -> bool:
        """Whether its journal holds file lines Spark reads itself (segments without a timestamp field,
        ``run``): what the native tier reads (``sbpy.bql.plan.native_verdict``)."""
        return not (self.interval > 0 or self.rewindable) and self.ts_path is None

    def _lines(self, ctx: Any) -> Any:
        """``(line number, data or None, error or None)`` of each non-blank line (per-tuple path)."""
        try:
            f = open(self.path, "rb")
        except OSError as e:
            raise RuntimeError(f"cannot open '{self.path}': {e.strerror}") from None
        with f:
            yield from json_lines(f, lambda n: f"file source: {self.path}:{n}")

    def _chunks(self, offset: int, line: int, pass_no: int) -> Any:
        """Segments (``journal_segments.make_segment``) of the file from byte ``offset`` (line number
        ``line``): chunks of about ``CHUNK_BYTES`` cut after a newline (a longer line is one chunk)."""
        try:
            f = open(self.path, "rb")
        except OSError as e:
            raise RuntimeError(f"cannot open '{self.path}': {e.strerror}") from None
        path = os.path.abspath(self.path)
        tsf = path_text(self.ts_path) if self.ts_path is not None else None
        buf = bytearray(CHUNK_BYTES)  # read into one buffer: no allocation nor copy per chunk
        view = memoryview(buf)
        with f:
            f.seek(offset)
            while True:
                got = f.readinto(buf)
                if not got:
                    return
                chunk: bytes | memoryview = view[:got]
                if got == CHUNK_BYTES:  # not at the end: cut after the last newline
                    cut = buf.rfind(b"\n")
                    if cut < 0:  # one line longer than a chunk: read on to its end
                        chunk = bytes(buf) + f.readline()
                    else:
                        chunk = view[:cut + 1]
                        f.seek(offset + cut + 1)
                seg = js.make_segment(path, offset, chunk, line, pass_no, tsf)
                offset += len(chunk)
                line += seg["n"]
                yield seg

    def update(self, params: dict[str, Any]) -> None:
        """UPDATE SOURCE ... SET interval = d: the pace of a source created with an ``interval``
        (the next tuple is due ``d`` after the last one, also when the source is waiting for it now).
        Other parameters cannot change while the source runs."""
        for key in params:
            if key != "interval":
                raise ValueError(f"parameter '{key}' cannot be updated (only interval can)")
        if "interval" in params:
            interval = parse_duration(params["interval"])
            if self.interval <= 0 or interval <= 0:
                raise ValueError("interval can only be changed between positive durations on a source "
                                 "created with an interval (without one the file is read in segments)")
            self.interval = interval

    def run(self, ctx: Any) -> None:
        """Journal the file by reference, a segment per chunk (its lines are read and parsed by Spark);
        with ``interval`` (one tuple at that pace) or ``rewindable`` (the file may be rewritten before a
        REWIND, while its earlier contents are still unread) emit one parsed tuple per line."""
        if self.interval > 0 or self.rewindable:
            self._run_tuples(ctx)
        else:
            self._run_segments(ctx)

    def _run_segments(self, ctx: Any) -> None:
        resume = ctx.resume
        passes = int(resume["pass"]) if resume else 0
        offset, line = (int(resume["end"]), int(resume["line"]) + int(resume["n"])) if resume else (0, 1)
        while True:
            for seg in self._chunks(offset, line, passes):
                ctx.emit_segment(seg)  # blocks while paused: PAUSE takes effect at the next chunk
            offset, line = 0, 1
            passes += 1
            if self.repeat < 0 or passes <= self.repeat:
                continue
            return

    def _run_tuples(self, ctx: Any) -> None:
        skip = 0 if self.rewindable else ctx.skip
        passes = 0
        previous: float | None = None  # when the last tuple was due
        while True:
            rewound = False
            for _n, data, error in self._lines(ctx):
                if ctx.rewind_requested():
                    rewound = True
                    break
                if data is None:
                    if not skip:  # a bad line before the resume position was reported before the restart
                        log.warning("%s", error)
                        ctx.report_dropped(error)
                    continue
                if skip:
                    skip -= 1
                    continue
                ts = None
                if self.interval > 0:
                    at = wait_turn(ctx, previous, lambda: self.interval)
                    if at is None:
                        return
                    ts = _dt.datetime.fromtimestamp(at, _dt.timezone.utc)
                    previous = after_turn(at, self.interval)
                if self.ts_path is not None:
                    raw = _lookup(data, self.ts_path)
                    try:
                        ts = to_timestamp(raw)
                    except ValueError as e:
                        log.warning("file source: %s: bad timestamp_field value: %s", self.path, e)
                ctx.emit(data, ts)
            if rewound:
                continue
            passes += 1
            if self.rewindable:
                ctx.flush()
                self.waiting_for_rewind = True
                ok = ctx.wait_for_rewind()
                self.waiting_for_rewind = False
                if not ok:
                    return
                continue
            if self.repeat < 0 or passes <= self.repeat:
                continue
            return


def wait_turn(ctx: Any, previous: float | None, interval: Any) -> float | None:
    """Wait until the next paced tuple is due and return when that was: at once for the first
    (``previous`` None), else ``previous + interval()`` — re-read while waiting, so an UPDATE SOURCE
    of the interval takes effect at once. None when the source is stopping."""
    while True:
        at = time.time() if previous is None else previous + interval()
        delay = at - time.time()
        if delay <= 0:
            return at
        if not ctx.sleep(min(delay, _PACE_RECHECK_S)):
            return None


def after_turn(at: float, interval: float) -> float:
    """The ``previous`` of the next ``wait_turn`` after a tuple due at ``at``: a source that fell
    behind catches up by at most one interval (the next tuple is due no earlier than now - interval)."""
    return max(at, time.time() - 2 * interval)


def update_interval(source: Any, params: dict[str, Any]) -> None:
    """UPDATE SOURCE ... SET interval = d of a status source (the next tuples come every ``d``)."""
    for key in params:
        if key != "interval":
            raise ValueError(f"parameter '{key}' cannot be updated (only interval can)")
    if "interval" in params:
        interval = parse_duration(params["interval"])
        if interval <= 0:
            raise ValueError("interval must be positive")
        source.interval = interval


class NodeStatusesSource:
    """``node_statuses``: every ``interval`` (default 1 s) one tuple per node: its status map plus
    ``node_name`` and ``node_type``."""

    def __init__(self, params: dict[str, Any]):
        self.interval = parse_duration(params.get("interval", 1), "interval") or 1.0

    update = update_interval

    def run(self, ctx: Any) -> None:
        while ctx.sleep(self.interval):
            for kind, name, status in ctx.topology.node_statuses():
                ctx.emit(dict(status, node_name=name, node_type=kind))
            ctx.flush()


class EdgeStatusesSource:
    """``edge_statuses``: every ``interval`` one tuple per edge ``{sender, receiver, stats}``."""

    def __init__(self, params: dict[str, Any]):
        self.interval = parse_duration(params.get("interval", 1), "interval") or 1.0

    update = update_interval

    def run(self, ctx: Any) -> None:
        while ctx.sleep(self.interval):
            for edge in ctx.topology.edge_statuses():
                ctx.emit(edge)
            ctx.flush()


class DroppedTuplesSource:
    """``dropped_tuples``: one tuple per dropped tuple ``{node_type, node_name, event_type, data, error?}``."""

    def __init__(self, params: dict[str, Any]):
        self.queue: queue.Queue = queue.Queue(maxsize=10000)

    def _on_drop(self, event: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(event)
        except queue.Full:
            pass

    def run(self, ctx: Any) -> None:
        unsubscribe = ctx.topology.subscribe_dropped(self._on_drop)
        try:
            while not ctx.stopping:
                try:
                    event = self.queue.get(timeout=0.1)
                except queue.Empty:
                    ctx.flush()
                    continue
                ctx.emit(event)
                if self.queue.empty():
                    ctx.flush()
        finally:
            unsubscribe()


SOURCE_TYPES: dict[str, type] = {
    "file": FileSource,
    "node_statuses": NodeStatusesSource,
    "edge_statuses": EdgeStatusesSource,
    "dropped_tuples": DroppedTuplesSource,
}
