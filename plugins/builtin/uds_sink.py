"""The ``uds`` sink: ``CREATE SINK s TYPE uds WITH name = "my_state"`` hands every tuple it receives
to the state's ``write(data)`` (e.g. training a classifier).

CREATE SINK fails when the state does not exist or does not accept writes. The state is looked up
again on every write, so a LOAD STATE replacement is seen; dropping the state does not drop the sink
(its writes then fail and are logged). A tuple whose ``write`` raises is logged and counted
(``status()["num_errors"]``); the other tuples of the batch are still written. A batch replayed by
Spark after a crash (same ``(query_id, batch_id)``) is skipped.

    >>> from sbpy.plugins.api import Context
    >>> class Model:
    ...     def __init__(self): self.seen = []
    ...     def write(self, data): self.seen.append(data)
    >>> class States(dict):
    ...     pass
    >>> states = States(m=Model())
    >>> sink = UDSSink({"name": "m"}, context=Context("t", states))
    >>> sink.write([{"x": 1}], batch=("q", 0)); states["m"].seen
    [{'x': 1}]
"""
from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger("sbpy.sink")


class UDSSink:
    """``uds``: ``name`` (required) is the state the tuples are written to."""

    binds_context = True  # the per-topology registry binds ``context`` (sbpy.plugins.registry)

    def __init__(self, params: dict[str, Any], recovering: bool = False, context: Any = None):
        name = params.get("name")
        if name is None:
            raise ValueError("name parameter is missing")
        if not isinstance(name, str) or not name:
            raise ValueError("name must be a string")
        self.name = name.lower()
        self.context = context
        self.lock = threading.Lock()
        self.num_errors = 0
        self.written: dict[str, int] = {}
        state = self._state()  # CREATE SINK fails here when the state is missing or not writable
        del state

    def _state(self) -> Any:
        states = getattr(self.context, "states", None)
        if states is None:
            raise ValueError(f"state '{self.name}' was not found")
        try:
            state = states.get(self.name)
        except Exception as err:  # noqa: BLE001 - StateManager raises its own not-found error
            raise ValueError(str(err)) from None
        if state is None:
            raise ValueError(f"state '{self.name}' was not found")
        if not callable(getattr(state, "write", None)):
            raise ValueError(f"state '{self.name}' does not support writing tuples")
        return state

    def write(self, tuples: list[dict[str, Any]], batch: tuple[str, int] | None = None) -> None:
        with self.lock:
            if batch is not None and self.written.get(batch[0], -1) >= batch[1]:
                return
            state = self._state()
            for data in tuples:
                try:
                    state.write(data)
                except Exception as err:  # noqa: BLE001 - one bad tuple must not lose the batch
                    self.num_errors += 1
                    log.warning("uds sink: state '%s' failed to write a tuple: %s", self.name, err)
            if batch is not None:
                self.written[batch[0]] = batch[1]

    def status(self) -> dict[str, Any]:
        return {"state": self.name, "num_errors": self.num_errors}

    def close(self) -> None:
        return None
