"""The console's live feed: Server-Sent Events (``text/event-stream``) built from topology snapshots.

One ``ConsoleFeed`` per connection. Each ``tick()`` answers the events of one step, in this order:

- ``topologies``: ``{"topologies": [{"name", "nodes", "states": {state: count}}]}``, every topology of
  the server (sorted by name);
- ``topology`` (only when the connection watches one): ``topology_snapshot`` of it with each node's
  ``rates`` (``{"in", "out", "dropped"}`` tuples per second, ``rates.RateTracker``; None while unknown)
  and ``recent_drops``: the latest tuples the topology dropped or failed on since the connection opened
  (``Topology.subscribe_dropped``: node, event type, error text and the tuple, newest last, at most
  ``RECENT_DROPS``), plus ``drops_seen``, how many were reported in all;
- ``gone``: ``{"topology": name}`` once, when the watched topology does not exist (the feed then only
  sends ``topologies``).

Each event is ``event: <name>`` / ``id: <step>`` / ``data: <one JSON line>`` and a blank line (the
SSE wire format: ``sse_event``).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sbpy.bql.errors import BQLError
from sbpy.bql.jsonio import to_json_bytes

from ..manager import TopologyManager, TopologyNotFoundError
from .rates import RateTracker
from .snapshot import topology_snapshot

RECENT_DROPS = 20
DATA_PREVIEW_CHARS = 300
RATE_FIELDS = ("in", "out", "dropped")


def sse_event(event: str, data: Any, event_id: int | None = None) -> bytes:
    """One SSE event; ``data`` (BQL values) as one line of JSON (JSON never holds a raw newline)."""
    head = f"event: {event}\n" + (f"id: {event_id}\n" if event_id is not None else "")
    return head.encode() + b"data: " + to_json_bytes(data) + b"\n\n"


def topology_list(manager: TopologyManager) -> list[dict[str, Any]]:
    """Name, node count and nodes per state of every topology, sorted by name."""
    out = []
    for topology in sorted(manager.list(), key=lambda t: t.name):
        states: dict[str, int] = {}
        count = 0
        for _type, _name, status in topology.node_statuses():
            states[status["state"]] = states.get(status["state"], 0) + 1
            count += 1
        out.append({"name": topology.name, "nodes": count, "states": states})
    return out


def _preview(data: Any) -> str:
    """The tuple as JSON text, cut after ``DATA_PREVIEW_CHARS`` characters."""
    try:
        text = to_json_bytes(data).decode()
    except BQLError:
        text = repr(data)
    return text if len(text) <= DATA_PREVIEW_CHARS else text[:DATA_PREVIEW_CHARS] + "…"


class ConsoleFeed:
    """The events of one console connection watching ``topology`` (or none)."""

    def __init__(self, manager: TopologyManager, topology: str | None,
                 clock: Callable[[], float] = time.monotonic, window: float | None = None):
        self.manager = manager
        self.topology = topology.lower() if topology else None
        self.clock = clock
        self.rates = RateTracker(window) if window is not None else RateTracker()
        self.step = 0
        self._drops: deque[dict[str, Any]] = deque(maxlen=RECENT_DROPS)
        self._drops_seen = 0
        self._lock = threading.Lock()
        self._unsubscribe: Callable[[], Any] | None = None
        self._subscribed_to: Any = None
        self._gone_sent = False

    def _on_drop(self, event: dict[str, Any]) -> None:
        """Called by the topology (any thread) for every dropped tuple."""
        item = {"node": event.get("node_name"), "node_type": event.get("node_type"),
                "event": event.get("event_type"), "error": event.get("error"),
                "data": _preview(event.get("data")),
                "at": datetime.now(UTC).isoformat(timespec="milliseconds")}
        with self._lock:
            self._drops.append(item)
            self._drops_seen += 1

    def _watch(self, topology: Any) -> None:
        if self._subscribed_to is topology:
            return
        self.close()
        self._unsubscribe = topology.subscribe_dropped(self._on_drop)
        self._subscribed_to = topology

    def close(self) -> None:
        """Stop listening to the watched topology's dropped tuples."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = self._subscribed_to = None

    def snapshot(self, topology: Any) -> dict[str, Any]:
        """``topology_snapshot`` with rates and the recent drops (see the module docstring)."""
        snap = topology_snapshot(topology)
        counters = {(node["name"], field): node[field] for node in snap["nodes"] for field in RATE_FIELDS
                    if node[field] is not None}
        rates = self.rates.update(self.clock(), counters)
        for node in snap["nodes"]:
            node["rates"] = {field: rates.get((node["name"], field)) for field in RATE_FIELDS}
        with self._lock:
            snap["recent_drops"] = list(self._drops)
            snap["drops_seen"] = self._drops_seen
        return snap

    def tick(self) -> list[bytes]:
        """The events of the next step."""
        self.step += 1
        events = [sse_event("topologies", {"topologies": topology_list(self.manager)}, self.step)]
        if self.topology is None:
            return events
        try:
            topology = self.manager.get(self.topology)
        except TopologyNotFoundError:
            self.close()
            if not self._gone_sent:
                events.append(sse_event("gone", {"topology": self.topology}, self.step))
                self._gone_sent = True
            return events
        self._gone_sent = False
        self._watch(topology)
        events.append(sse_event("topology", self.snapshot(topology), self.step))
        return events
