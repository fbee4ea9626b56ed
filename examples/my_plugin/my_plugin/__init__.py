"""An example sbpy plugin package registered through the ``sbpy.plugins`` entry-point group.

    CREATE STATE h TYPE my_plugin_histogram WITH field = "word";
    CREATE SINK hs TYPE uds WITH name = "h";
    INSERT INTO hs FROM words;
    SELECT RSTREAM my_plugin_count("h", word) AS n, word FROM words [RANGE 1 TUPLES];
"""
from __future__ import annotations

import json
import threading
from typing import Any, BinaryIO

import sbpy.plugins as sb

if sb.API_VERSION < 1:  # pragma: no cover
    raise ImportError("my_plugin needs sbpy plugin API version 1")


def reverse(s: str) -> str:
    return s[::-1]


class Histogram(sb.SharedState):
    """Counts of the values of ``field``."""

    def __init__(self, field: str):
        self.field = field
        self.counts: dict[str, int] = {}
        self.lock = threading.Lock()

    def write(self, data: dict[str, Any]) -> None:
        key = str(data.get(self.field))
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1

    def count(self, value: str) -> int:
        return self.counts.get(value, 0)

    def save(self, w: BinaryIO, params: dict[str, Any]) -> None:
        with self.lock:
            w.write(json.dumps({"field": self.field, "counts": self.counts}).encode())

    @classmethod
    def load_state(cls, r: BinaryIO, params: dict[str, Any]) -> Histogram:
        doc = json.loads(r.read())
        h = cls(params.get("field", doc["field"]))
        h.counts = doc["counts"]
        return h


def count(ctx: sb.Context, state: str, value: str) -> int:
    return ctx.state(state, Histogram).count(value)


class MemorySink(sb.SinkType):
    """Keeps the last ``limit`` (default 100) tuples."""

    def __init__(self, params: dict[str, Any], recovering: bool = False):
        super().__init__(params, recovering)
        limit = params.get("limit", 100)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise ValueError("limit must be a positive integer")
        self.limit = limit
        self.rows: list[dict[str, Any]] = []

    def write_tuple(self, data: dict[str, Any]) -> None:
        self.rows.append(data)
        del self.rows[:-self.limit]


def register(regs: Any) -> None:
    """Entry point: add this plugin's components to ``regs`` (``sbpy.plugins.PluginRegistries``)."""
    regs.add_udf("my_plugin_reverse", reverse)
    regs.add_udf("my_plugin_count", count)
    regs.add_uds_type("my_plugin_histogram", Histogram)
    regs.add_sink_type("my_plugin_memory", MemorySink)
