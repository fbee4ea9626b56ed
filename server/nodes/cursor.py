"""The cursor of an ad-hoc SELECT: JSON-ready tuples from its Spark query, until the query ends or the
client closes it.

The query's foreachBatch thread ``put``s tuples into a bounded queue (it waits while the queue is
full, so a slow client slows the query down; ``close`` releases it at once). Iterating yields dicts
whose values are plain JSON types (timestamps as RFC3339 strings, blobs base64); iteration ends when
the query's input has ended (``finish``) or after ``close``.
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from sbpy.bql.jsonio import to_json_bytes

_END = object()
QUEUE_SIZE = 1024


def json_ready(data: Any) -> Any:
    """``data`` with only JSON types (what the REST layer serializes)."""
    return orjson.loads(to_json_bytes(data))


class SelectCursor:
    """Tuples of one ad-hoc SELECT (thread-safe producer side, single consumer)."""

    def __init__(self, on_close: Callable[[SelectCursor], None] | None = None, maxsize: int = QUEUE_SIZE):
        self._q: queue.Queue = queue.Queue(maxsize=maxsize)
        self._closed = threading.Event()
        self._finished = False
        self._on_close = on_close
        self.error: str | None = None

    # ------------------------------------------------------------ producer side

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def put(self, data: dict[str, Any]) -> bool:
        """Queue one tuple (waits while the queue is full); False once the cursor is closed."""
        item = json_ready(data)
        while not self._closed.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def finish(self, error: str | None = None) -> None:
        """The query ended: iteration stops after the queued tuples."""
        if self._finished:
            return
        self._finished = True
        self.error = error
        while not self._closed.is_set():
            try:
                self._q.put(_END, timeout=0.1)
                return
            except queue.Full:
                continue

    # ------------------------------------------------------------ consumer side

    def __iter__(self) -> Iterator[dict[str, Any]]:
        while not self._closed.is_set():
            try:
                item = self._q.get(timeout=0.1)
            except queue.Empty:
                continue
            if item is _END:
                return
            yield item

    def get(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next tuple, None at the end, ``queue.Empty`` after ``timeout`` without one."""
        item = self._q.get(timeout=timeout)
        if item is _END:
            self._q.put(_END)
            return None
        return item

    def close(self) -> None:
        """Stop the query promptly (idempotent)."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self._on_close is not None:
            self._on_close(self)
