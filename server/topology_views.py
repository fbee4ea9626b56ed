"""The read side of a topology: node listings and REST views, statuses for the ``node_statuses`` /
``edge_statuses`` sources, and dropped-tuple reporting (a mixin of ``topology.Topology``)."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from sbpy.bql.errors import BQLExecutionError

from .drop_log import DropLogging
from .nodes import graph
from .nodes import status as st

log = logging.getLogger("sbpy.topology")

NODE_TYPES = {"source": "source", "stream": "box", "sink": "sink"}


class TopologyViews:
    """Views of ``sources`` / ``streams`` / ``sinks`` and the dropped-tuple listeners."""

    sources: dict[str, Any]
    streams: dict[str, Any]
    sinks: dict[str, Any]
    consumers: dict[str, Any]
    recovering: bool
    defer_consumers: bool
    context: Any
    drop_logging: DropLogging
    _drop_listeners: list[Callable[[dict[str, Any]], None]]

    def subscribe_dropped(self, callback: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every dropped tuple; returns the unsubscribe function."""
        self._drop_listeners.append(callback)
        return lambda: self._drop_listeners.remove(callback) if callback in self._drop_listeners else None

    def report_dropped(self, node: str, data: Any, error: str | None, event: str) -> None:
        kind = "box" if node in self.streams or node.startswith("select-") else \
            "sink" if node in self.sinks else "source"
        ev: dict[str, Any] = {"node_type": kind, "node_name": node, "event_type": event, "data": data}
        if error:
            ev["error"] = error
        self.drop_logging.dropped(kind, node, event, data, error)
        for cb in list(self._drop_listeners):
            try:
                cb(ev)
            except Exception:  # noqa: BLE001
                log.exception("dropped_tuples listener failed")

    def has_destination(self, name: str) -> bool:
        """Whether anything reads node ``name`` now: a stream, a sink or a running SELECT (SensorBee: a
        node without one drops what it emits, ``drop_log.py``). While persisted statements are replayed
        every node counts as read: its readers are being restored and resume from their checkpoints."""
        if self.recovering or self.defer_consumers:
            return True
        if graph.consumers_of(name, self.streams, self.sinks):
            return True
        return any(c.cursor is not None and not c.stopped and name in c.chain.inputs
                   for c in list(self.consumers.values()))

    def _outputs(self, name: str) -> list[str]:
        return graph.consumers_of(name, self.streams, self.sinks)

    def _view(self, kind: str, node: Any) -> dict[str, Any]:
        if kind == "source":
            status = node.status(self._outputs(node.name))
        elif kind == "stream":
            status = node.status(self._outputs(node.name))
        else:
            status = node.status()
        return {"node_type": NODE_TYPES[kind], "name": node.name, "state": node.state, "status": status}

    def _nodes(self, kind: str) -> dict[str, Any]:
        try:
            return {"source": self.sources, "stream": self.streams, "sink": self.sinks}[kind]
        except KeyError:
            raise BQLExecutionError(f"unknown node kind '{kind}'") from None

    def list_nodes(self, kind: str) -> list[dict[str, Any]]:
        """``kind`` is source, stream or sink: ``[{"node_type", "name", "state"}]``."""
        return [{"node_type": NODE_TYPES[kind], "name": n.name, "state": n.state}
                for n in list(self._nodes(kind).values())]

    def node(self, kind: str, name: str) -> dict[str, Any]:
        """The node's REST view ``{"node_type", "name", "state", "status"}``."""
        node = self._nodes(kind).get(name.lower())
        if node is None:
            raise BQLExecutionError(f"{kind} '{name}' was not found")
        return self._view(kind, node)

    def node_statuses(self) -> list[tuple[str, str, dict[str, Any]]]:
        """``(node_type, name, status)`` of every node (the ``node_statuses`` source)."""
        out = []
        for kind in ("source", "stream", "sink"):
            for n in list(self._nodes(kind).values()):
                out.append((NODE_TYPES[kind], n.name, self._view(kind, n)["status"]))
        return out

    def edge_statuses(self) -> list[dict[str, Any]]:
        """One ``{sender, receiver, stats}`` per edge (the ``edge_statuses`` source)."""
        out = []
        for sender, receiver in graph.edges(self.sources, self.streams, self.sinks):
            got = receiver.counters.input_stats()["inputs"].get(sender.name, {}).get("num_received", 0)
            out.append({"sender": {"node_name": sender.name, "node_type": NODE_TYPES[sender.kind]},
                        "receiver": {"node_name": receiver.name, "node_type": NODE_TYPES[receiver.kind]},
                        "stats": {"num_received": got, "queue_size": 0, "num_queued": 0}})
        return out

    def all_sources_stopped(self) -> bool:
        return all(s.state == st.STOPPED for s in list(self.sources.values()))
