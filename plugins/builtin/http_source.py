"""The ``http`` source: tuples POSTed to the server (``POST /api/v1/topologies/{t}/sources/{s}/tuples``,
``sbpy.server.api.ingest``).

A request body is JSON Lines (one JSON object per non-blank line), sent with ``Content-Type:
application/json``. Its good lines become tuples in their order; a line
that is not JSON or not an object is dropped and reported on ``dropped_tuples`` (``http source: line
3: cannot parse a line: ...``, the ``file`` source's wording), and listed in the answer. A request's
tuples are journaled together, in the order the requests arrive.

``offer(body)`` hands a request's tuples to the source's thread and waits until they are journaled
(at most ``ack_timeout``): the answer then says ``accepted``. A paused source does not take them: after
``ack_timeout`` the answer says ``queued`` (they are journaled on RESUME). At most ``max_queued``
tuples wait; beyond that a request is refused (``IngestRefused``, HTTP 503), as it is once the source
has stopped (waiting requests are then refused too).

Parameters: ``ack_timeout`` (duration, default 10 s), ``max_queued`` (default 100000),
``timestamp_field`` (a path whose value, epoch seconds or RFC3339, is the tuple's timestamp; default:
the arrival time). A live feed: not rewindable; after a server restart it takes new requests only.

>>> src = HttpSource({})
>>> batch = src.parse(b'{"a": 1}\\n\\nnot json\\n[1]\\n{"a": 2}\\n')
>>> [d for d, _ in batch.tuples], [e.split(":")[0:2] for e in batch.errors]
([{'a': 1}, {'a': 2}], [['http source', ' line 3'], ['http source', ' line 4']])
"""
from __future__ import annotations

import datetime as _dt
import logging
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from sbpy.bql.spark.journal_segments import compile_path, lookup, to_timestamp

from .sources import json_lines, parse_duration

log = logging.getLogger("sbpy.source")

DEFAULT_MAX_QUEUED = 100_000


class IngestRefused(Exception):
    """The source cannot take a request now (not running, or too many tuples waiting)."""


@dataclass
class IngestBatch:
    """One request's tuples (``(data, timestamp or None)``) and the errors of its dropped lines."""

    tuples: list[tuple[dict[str, Any], _dt.datetime | None]]
    errors: list[str]
    done: threading.Event = field(default_factory=threading.Event)
    journaled: bool = False  # set with ``done``; done and not journaled: the source stopped first

    def answer(self) -> dict[str, Any]:
        """The REST answer: ``accepted`` or ``queued`` (count), ``dropped`` and the drop ``errors``."""
        key = "accepted" if self.journaled else "queued"
        return {key: len(self.tuples), "dropped": len(self.errors), "errors": self.errors}


class HttpSource:
    """``http``: see the module docstring."""

    rewindable = False

    def __init__(self, params: dict[str, Any]):
        self.ack_timeout = parse_duration(params.get("ack_timeout", 10), "ack_timeout")
        max_queued = params.get("max_queued", DEFAULT_MAX_QUEUED)
        if isinstance(max_queued, bool) or not isinstance(max_queued, int) or max_queued < 1:
            raise ValueError("max_queued must be a positive integer")
        self.max_queued = max_queued
        tsf = params.get("timestamp_field")
        if tsf is not None and (not isinstance(tsf, str) or not tsf):
            raise ValueError("timestamp_field must be a non-empty string")
        self.ts_path = compile_path(tsf) if tsf else None
        self.batches: queue.Queue[IngestBatch] = queue.Queue()
        self.lock = threading.Lock()
        self.accepting = True  # until the source's thread ends
        self.num_queued = 0  # tuples offered and not yet journaled
        self.num_received = 0
        self.num_dropped = 0

    # ------------------------------------------------------------ the REST side

    def parse(self, body: bytes) -> IngestBatch:
        """The tuples and the dropped lines' errors of a request body (read as the ``file`` source
        reads a file: the same tuples, the same errors after the ``http source: line n:`` prefix)."""
        tuples, errors = [], []
        for _n, data, error in json_lines(body.split(b"\n"), lambda n: f"http source: line {n}"):
            if error is not None:
                errors.append(error)
            else:
                tuples.append((data, self._timestamp(data)))
        return IngestBatch(tuples, errors)

    def _timestamp(self, data: dict[str, Any]) -> _dt.datetime | None:
        if self.ts_path is None:
            return None
        try:
            return to_timestamp(lookup(data, self.ts_path))
        except ValueError as e:
            log.warning("http source: bad timestamp_field value: %s", e)
            return None

    def offer(self, body: bytes) -> dict[str, Any]:
        """Queue a request's tuples and wait (``ack_timeout``) until they are journaled; the answer
        (``IngestBatch.answer``). ``IngestRefused`` when the source cannot take them."""
        batch = self.parse(body)
        with self.lock:
            if not self.accepting:
                raise IngestRefused("the source is stopped")
            if self.num_queued + len(batch.tuples) > self.max_queued:
                raise IngestRefused(f"too many tuples are waiting (max_queued = {self.max_queued})")
            self.num_queued += len(batch.tuples)
            self.batches.put(batch)
        if batch.done.wait(self.ack_timeout) and not batch.journaled:
            raise IngestRefused("the source stopped before its tuples were journaled")
        return batch.answer()

    # ------------------------------------------------------------ the source's thread

    def run(self, ctx: Any) -> None:
        """Journal the requests' tuples, one request at a time, until the source stops."""
        batch = None
        try:
            while not ctx.stopping:
                try:
                    batch = self.batches.get(timeout=0.1)
                except queue.Empty:
                    batch = None
                    continue
                for error in batch.errors:
                    log.warning("%s", error)
                    ctx.report_dropped(error)
                for data, ts in batch.tuples:
                    ctx.emit(data, ts)  # blocks while paused; raises SourceStopped on stop
                ctx.flush()
                with self.lock:
                    self.num_queued -= len(batch.tuples)
                    self.num_received += len(batch.tuples)
                    self.num_dropped += len(batch.errors)
                batch.journaled = True
                batch.done.set()
                batch = None
        finally:
            self.stop_accepting()
            if batch is not None:  # taken, not journaled: stopped while paused
                with self.lock:
                    self.num_queued -= len(batch.tuples)
                batch.done.set()

    def stop_accepting(self) -> None:
        """Refuse new requests and release the waiting ones (the source is stopping)."""
        with self.lock:
            self.accepting = False
            while True:
                try:
                    batch = self.batches.get_nowait()
                except queue.Empty:
                    break
                self.num_queued -= len(batch.tuples)
                batch.done.set()

    def status(self) -> dict[str, Any]:
        """The ``source`` part of the node status: tuples received, waiting and dropped lines."""
        with self.lock:
            return {"num_received": self.num_received, "num_queued": self.num_queued,
                    "num_dropped": self.num_dropped}
