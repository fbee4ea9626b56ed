"""A source for tests that must act while a query is still running: ``gated_rows`` emits ``{"a": i}``
for ``i < n``, commits the first ``first`` of them and then holds the rest back until ``GATES[gate]``
is set (or the source is stopped) — so a test's step between the two parts never races the source's
end, however slowly Spark starts. Registered when loaded (``load_modules(["gated_source"])``)."""
from __future__ import annotations

import threading
from typing import Any

from sbpy.plugins import source_type

GATES: dict[str, threading.Event] = {}


def gate(name: str) -> threading.Event:
    """The event that releases the rows after ``first`` of the sources created with ``gate = name``."""
    return GATES.setdefault(name, threading.Event())


@source_type("gated_rows")
class GatedRows:
    def __init__(self, params: dict[str, Any]):
        self.n, self.first, self.gate = int(params["n"]), int(params["first"]), gate(str(params["gate"]))

    def run(self, ctx: Any) -> None:
        for i in range(self.n):
            if i == self.first:
                ctx.flush()
                while not self.gate.wait(0.05):
                    if ctx.stopping:
                        return
            ctx.emit({"a": i})
