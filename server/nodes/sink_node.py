"""A sink node: its type instance (``write``/``close``), its inputs (INSERT INTO) and counters.

A sink stays ``running`` until DROP SINK or topology stop, which close (flush) it. Writes come from
Spark's foreachBatch thread; one lock per sink keeps them in order.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from sbpy.bql.jsonio import JsonLines

from . import status as st

log = logging.getLogger("sbpy.sink")


class SinkNode:
    """One sink of a topology."""

    kind = "sink"

    def __init__(self, name: str, type_name: str, impl: Any):
        self.name = name
        self.type_name = type_name
        self.impl = impl
        self.inputs: list[str] = []
        self.counters = st.Counters()
        self.state = st.RUNNING
        self.error: str | None = None
        self._lock = threading.Lock()

    @property
    def update_lock(self) -> threading.Lock:
        """Held by UPDATE SINK while the sink's ``update`` runs: never during one of its writes."""
        return self._lock

    @property
    def takes_json_lines(self) -> bool:
        """The sink type accepts tuples pre-encoded as JSON lines (``write_json_lines``)."""
        return hasattr(self.impl, "write_json_lines")

    def write_json_lines(self, input_name: str, lines: list[str] | JsonLines, batch: tuple[str, int] | None) -> None:
        """``write`` for tuples encoded by ``sbpy.bql.jsonio.to_json`` on the executors."""
        with self._lock:
            if self.state == st.STOPPED:
                return
            if isinstance(lines, JsonLines) and not getattr(self.impl, "takes_json_text", False):
                lines = list(lines)  # a plugin sink's write_json_lines takes a list of lines
            try:
                self.impl.write_json_lines(lines, batch=batch)
            except Exception as e:  # noqa: BLE001 - a sink failure drops the batch
                log.warning("sink '%s' failed to write %d tuples: %s", self.name, len(lines), e)
                self.counters.add_error(len(lines))
            self.counters.add_received(input_name, len(lines))

    def write(self, input_name: str, tuples: list[dict[str, Any]], batch: tuple[str, int] | None) -> None:
        """Write one batch from ``input_name``; a failing write is logged and counted as errors."""
        with self._lock:
            if self.state == st.STOPPED:
                return
            try:
                if tuples or batch is not None:
                    self.impl.write(tuples, batch=batch)
            except Exception as e:  # noqa: BLE001 - a sink failure drops the batch
                log.warning("sink '%s' failed to write %d tuples: %s", self.name, len(tuples), e)
                self.counters.add_error(len(tuples))
            self.counters.add_received(input_name, len(tuples))

    def close(self) -> None:
        with self._lock:
            if self.state == st.STOPPED:
                return
            self.state = st.STOPPING
            try:
                self.impl.close()
            except Exception as e:  # noqa: BLE001
                log.warning("sink '%s' failed to close: %s", self.name, e)
                self.error = str(e)
            self.state = st.STOPPED

    def status(self) -> dict[str, Any]:
        comp = self.impl.status() if hasattr(self.impl, "status") else None
        return st.sink_status(self.state, self.counters, self.error, comp)
