"""Node states and SensorBee's node status maps (sensorbee-server.md, section 3).

States: ``initialized``, ``starting``, ``running``, ``paused``, ``stopping``, ``stopped``.

Counters live in ``Counters`` (one per node, own lock: Spark's foreachBatch thread updates them while
REST threads read them); the ``*_status`` functions render the maps the REST API and the
``node_statuses`` source show.
"""
from __future__ import annotations

import threading
from typing import Any

INITIALIZED = "initialized"
STARTING = "starting"
RUNNING = "running"
PAUSED = "paused"
STOPPING = "stopping"
STOPPED = "stopped"
STATES = (INITIALIZED, STARTING, RUNNING, PAUSED, STOPPING, STOPPED)


class Counters:
    """Tuple counters of one node."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: dict[str, int] = {}  # input node -> tuples processed from it
        self.num_errors = 0
        self.num_sent_total = 0
        self.num_dropped = 0
        self.sent_to: dict[str, int] = {}  # output node -> tuples sent to it
        self.queue_sizes: dict[str, int] = {}  # input node -> its BUFFER SIZE (streams)

    def add_received(self, inp: str, n: int) -> None:
        with self.lock:
            self.received[inp] = self.received.get(inp, 0) + n

    def add_sent(self, n: int, dst: str | None = None) -> None:
        with self.lock:
            self.num_sent_total += n
            if dst is not None:
                self.sent_to[dst] = self.sent_to.get(dst, 0) + n

    def add_error(self, n: int = 1) -> None:
        with self.lock:
            self.num_errors += n

    def add_dropped(self, n: int = 1) -> None:
        with self.lock:
            self.num_dropped += n

    def input_stats(self) -> dict[str, Any]:
        with self.lock:
            inputs = {k: {"num_received": self.received.get(k, 0), "queue_size": self.queue_sizes.get(k, 0),
                          "num_queued": 0} for k in {**self.queue_sizes, **self.received}}
            return {"num_received_total": sum(self.received.values()), "num_errors": self.num_errors,
                    "inputs": inputs}

    def output_stats(self, outputs: list[str] = ()) -> dict[str, Any]:
        with self.lock:
            outs = {d: {"num_sent": self.sent_to.get(d, 0), "queue_size": 0, "num_queued": 0} for d in outputs}
            return {"num_sent_total": self.num_sent_total, "num_dropped": self.num_dropped, "outputs": outs}


def source_status(state: str, counters: Counters, outputs: list[str], error: str | None,
                  component: dict[str, Any] | None) -> dict[str, Any]:
    """``{state, output_stats, behaviors, error?, source?}``."""
    st: dict[str, Any] = {
        "state": state,
        "output_stats": counters.output_stats(outputs),
        "behaviors": {"stop_on_disconnect": False, "remove_on_stop": False},
    }
    if error:
        st["error"] = error
    if component is not None:
        st["source"] = component
    return st


def stream_status(state: str, counters: Counters, outputs: list[str], error: str | None) -> dict[str, Any]:
    """``{state, input_stats, output_stats, behaviors, error?}`` (a SensorBee "box")."""
    st: dict[str, Any] = {
        "state": state,
        "input_stats": counters.input_stats(),
        "output_stats": counters.output_stats(outputs),
        "behaviors": {"stop_on_inbound_disconnect": True, "stop_on_outbound_disconnect": False,
                      "graceful_stop": True, "remove_on_stop": False},
    }
    if error:
        st["error"] = error
    return st


def sink_status(state: str, counters: Counters, error: str | None,
                component: dict[str, Any] | None) -> dict[str, Any]:
    """``{state, input_stats, behaviors, error?, sink?}``."""
    st: dict[str, Any] = {
        "state": state,
        "input_stats": counters.input_stats(),
        "behaviors": {"stop_on_disconnect": False, "graceful_stop": True, "remove_on_stop": False},
    }
    if error:
        st["error"] = error
    if component is not None:
        st["sink"] = component
    return st
