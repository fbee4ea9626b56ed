"""A source node: its type instance, its driver thread and the controls PAUSE / RESUME / REWIND / DROP.

The thread runs the source type's ``run(ctx)`` with a ``SourceContext``; every emitted tuple is
journaled (buffered, committed in batches of up to 256 tuples or whenever the source waits: one write
and one HEAD update per batch); the ``file`` source journals whole chunks of its file instead
(``emit_segment``): the chunks it reads are committed together, one commit at most every
``SEGMENT_GROUP_SECONDS`` while it reads on, and whenever it waits or pauses; the last ones take the end
marker along (a reader sees a whole file read at once in one piece, not chunk by chunk). A commit
waits while a query reading the source with a ``WAIT`` buffer has a full backlog, and commits only as
many tuples as there is room for (``backpressure.py``); after a commit the topology's journal is
pruned when due (``server/journal_prune.py``). When ``run`` returns the node writes its end marker
and becomes ``stopped``; a failure ends it too, with ``status.error``. The thread stops by itself on
DROP SOURCE or topology stop.
"""
from __future__ import annotations

import datetime as _dt
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sbpy.bql.spark.journal_format import decode_data, ts_to_us
from sbpy.bql.spark.journal_segments import expand, last_seq

from ..drop_log import DESTINATIONLESS_ERROR
from ..journal_prune import maybe_prune
from . import backpressure
from . import status as st
from .backpressure import Backpressure

log = logging.getLogger("sbpy.source")

FLUSH_EVERY = 256
SEGMENT_GROUP_SECONDS = 0.5  # a file chunk waits at most this long for the next ones to share its commit


def segment_values(name: str, seg: dict[str, Any]) -> list[Any]:
    """The tuples a journaled file chunk holds, as a reader of the journal gets them (``expand``: its
    well-formed lines; nothing when the bytes are gone)."""
    rows = expand(0, 0, seg, name, -1, last_seq(0, seg))
    return [decode_data(text) for _seq, _input, _ts, text, _end, _error in rows if text is not None]


class SourceStopped(Exception):
    """Raised inside a source's ``run`` when the source is being stopped."""


class SourceContext:
    """What a running source type sees (see ``sbpy.plugins.builtin.sources``)."""

    def __init__(self, node: SourceNode):
        self._node = node
        self._buf: list[tuple[int, Any]] = []
        self._segs: list[tuple[int, dict[str, Any]]] = []  # file chunks read, not yet committed
        self._segs_since = 0.0  # when the first of them was read (monotonic)
        self._segs_lines = 0  # the non-blank lines they hold
        self.skip = node.skip
        self.resume = node.journal.last_segment(node.name)  # the last file segment journaled before a restart
        self.topology = node.topology

    @property
    def name(self) -> str:
        return self._node.name

    @property
    def stopping(self) -> bool:
        return self._node._stop.is_set()

    def _wait_running(self) -> None:
        """Raise ``SourceStopped`` when stopping; block (buffer committed) while paused."""
        node = self._node
        if node._stop.is_set():
            raise SourceStopped()
        if not node._running.is_set():
            self.flush()
            while not node._running.wait(0.1):
                if node._stop.is_set():
                    raise SourceStopped()

    def emit(self, data: dict[str, Any], ts: _dt.datetime | None = None) -> None:
        self._wait_running()
        if self._segs:  # chunks read before this tuple are journaled before it
            self._commit_segments()
        if ts is None:
            ts = _dt.datetime.now(_dt.timezone.utc)
        self._buf.append((ts_to_us(ts), data))
        if len(self._buf) >= FLUSH_EVERY:
            self.flush()

    def emit_segment(self, seg: dict[str, Any], ts: _dt.datetime | None = None) -> None:
        """Journal a chunk of a file by reference (``journal_segments.make_segment``), one seq per line:
        committed with the chunks read after it within ``SEGMENT_GROUP_SECONDS`` (or at the next
        wait, pause or end; at once when they hold more lines than ``backpressure.SEGMENT_BACKLOG``, a
        micro-batch's worth); blocks while paused, raises ``SourceStopped`` when stopping."""
        self._wait_running()
        self._flush_tuples()
        if ts is None:
            ts = _dt.datetime.now(_dt.timezone.utc)
        now = time.monotonic()
        if not self._segs:
            self._segs_since = now
            self._segs_lines = 0
        self._segs.append((ts_to_us(ts), seg))
        self._segs_lines += int(seg["k"])
        if now - self._segs_since >= SEGMENT_GROUP_SECONDS or \
                self._segs_lines > backpressure.SEGMENT_BACKLOG:  # more than one micro-batch reads anyway
            self._commit_segments()

    def _commit_segments(self, end: bool = False) -> None:
        """Commit the chunks read so far, as many at a time as the readers' backlog has room for (a
        chunk is admitted whole; ``backpressure.SEGMENT_BACKLOG``); ``end``: the end marker follows the
        last of them in the same commit. Raises ``SourceStopped`` if the source stops meanwhile."""
        node = self._node
        committed = False
        while self._segs:
            room = node.backpressure.wait_for_room(node._stop, backpressure.SEGMENT_BACKLOG)
            if room == 0:
                raise SourceStopped()
            take, lines = 0, 0
            for _ts, seg in self._segs:
                if take and room is not None and lines + int(seg["k"]) > room:
                    break
                take += 1
                lines += int(seg["k"])
            part, self._segs = self._segs[:take], self._segs[take:]
            node.journal.append_segments(node.name, part, end=end and not self._segs)
            node.count_emitted(lines, lambda part=part: [v for _ts, s in part
                                                         for v in segment_values(node.name, s)])
            committed = True
        if committed:
            maybe_prune(node.topology)

    def report_dropped(self, error: str, data: Any = None) -> None:
        """Report a tuple the source could not emit (a bad line) on ``dropped_tuples``."""
        self._node.topology.report_dropped(self._node.name, data, error, "input")

    def flush(self, end: bool = False) -> None:
        """Commit the buffered tuples or file chunks; ``end``: the source is done, and its last chunks
        take the end marker along (``SourceNode._finish`` writes it otherwise)."""
        self._flush_tuples()
        self._commit_segments(end)

    def _flush_tuples(self) -> None:
        """Commit the buffered tuples, as many at a time as the readers' ``WAIT`` buffers have room for
        (waiting while there is none); raises ``SourceStopped`` if the source is stopped meanwhile (the
        uncommitted tuples are emitted again after a restart, as any uncommitted ones)."""
        node = self._node
        if not self._buf:
            return
        while self._buf:
            room = node.backpressure.wait_for_room(node._stop)
            if room == 0:
                raise SourceStopped()
            n = len(self._buf) if room is None else min(room, len(self._buf))
            part, self._buf = self._buf[:n], self._buf[n:]
            node.journal.append(node.name, part)
            node.count_emitted(len(part), lambda part=part: [data for _ts, data in part])
        maybe_prune(node.topology)

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` (committing buffered tuples first); False when stopping."""
        self.flush()
        return not self._node._stop.wait(seconds)

    def rewind_requested(self) -> bool:
        if self._node._rewind.is_set():
            self._node._rewind.clear()
            return True
        return False

    def wait_for_rewind(self) -> bool:
        """Block until REWIND SOURCE (True) or stop (False)."""
        self.flush()
        node = self._node
        while not node._stop.is_set():
            if node._rewind.wait(0.1):
                node._rewind.clear()
                return True
        return False


class SourceNode:
    """One source of a topology."""

    kind = "source"

    def __init__(self, topology: Any, name: str, type_name: str, impl: Any, journal: Any, paused: bool,
                 on_stopped: Callable[[SourceNode], None], skip: int = 0):
        self.topology = topology
        self.name = name
        self.type_name = type_name
        self.impl = impl
        self.journal = journal
        self.skip = skip
        self.counters = st.Counters()
        self.counters.num_sent_total = skip
        self.error: str | None = None
        self.drop_reporter: str | None = None  # the consumer reporting the source's bad lines (consumer.py)
        self.backpressure = Backpressure(topology, name)
        self.state = st.PAUSED if paused else st.RUNNING
        self._on_stopped = on_stopped
        self._running = threading.Event()
        self._stop = threading.Event()
        self._rewind = threading.Event()
        self.update_lock = threading.Lock()  # one UPDATE SOURCE at a time (its ``run`` goes on meanwhile)
        if not paused:
            self._running.set()
        self._thread = threading.Thread(target=self._run, name=f"sbpy-source-{name}", daemon=True)

    @property
    def rewindable(self) -> bool:
        return bool(getattr(self.impl, "rewindable", False))

    @property
    def journals_lines(self) -> bool:
        """Whether its journal holds file lines (the built-in ``file`` source read in segments), which the
        native tier reads; every other source journals tuples."""
        from sbpy.plugins.builtin.sources import FileSource

        return isinstance(self.impl, FileSource) and self.impl.journals_lines()

    def start(self) -> None:
        self._thread.start()

    # ------------------------------------------------------------ thread

    def _run(self) -> None:
        ctx = SourceContext(self)
        while not self._running.wait(0.1):  # a paused source starts (opens its file) on RESUME
            if self._stop.is_set():
                return
        try:
            self.impl.run(ctx)
            if not self._stop.is_set():
                ctx.flush(end=True)
        except SourceStopped:
            pass
        except Exception as e:  # noqa: BLE001 - a failing source stops with an error
            log.warning("source '%s' failed: %s", self.name, e)
            self.error = str(e)
            try:
                ctx.flush()
            except Exception:  # noqa: BLE001
                pass
        finally:
            if not self._stop.is_set():
                self._finish()

    def _finish(self) -> None:
        self.journal.end(self.name)
        self.state = st.STOPPED
        self._on_stopped(self)

    # ------------------------------------------------------------ controls

    def pause(self) -> None:
        if self.state == st.RUNNING:
            self._running.clear()
            self.state = st.PAUSED

    def resume(self) -> None:
        if self.state == st.PAUSED:
            self.state = st.RUNNING
            self._running.set()

    def rewind(self) -> None:
        self._rewind.set()

    def stop(self, end: bool, timeout: float = 5.0) -> None:
        """Stop the thread; ``end`` writes the end marker (DROP SOURCE) so downstream streams drain."""
        if self.state == st.STOPPED:
            return
        self.state = st.STOPPING
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if end:
            self.journal.end(self.name)
        self.state = st.STOPPED
        self._on_stopped(self)

    def count_emitted(self, n: int, values: Callable[[], list[Any]]) -> None:
        """``n`` tuples were just journaled: sent, or, while nothing reads this source, *destinationless* —
        SensorBee counts them dropped and, with ``log_destinationless_tuples``, reports each one
        (``values()`` gives them; ``drop_log.py``)."""
        if self.topology.has_destination(self.name):
            self.counters.add_sent(n)
            return
        self.counters.add_dropped(n)
        if self.topology.drop_logging.log_destinationless:
            for data in values():
                self.topology.report_dropped(self.name, data, DESTINATIONLESS_ERROR, "output")

    # ------------------------------------------------------------ views

    def status(self, outputs: list[str]) -> dict[str, Any]:
        comp = self.impl.status() if hasattr(self.impl, "status") else None
        return st.source_status(self.state, self.counters, outputs, self.error, comp)


def wait_until(pred: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    """Poll ``pred`` until true or ``timeout`` (helper for tests and runfile)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()
