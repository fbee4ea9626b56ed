"""SensorBee's dropped-tuple log: the ``logging`` options ``log_dropped_tuples``,
``log_destinationless_tuples`` and ``summarize_dropped_tuples`` (sensorbee ``core/context.go``).

- With ``log_dropped_tuples`` every dropped tuple is logged at INFO on the ``sbpy.dropped`` logger as
  ``A tuple was dropped from the topology`` followed by its node type and name, the event type, the
  error (when there is one) and the tuple: its timestamp and its data as JSON.
- With ``summarize_dropped_tuples`` the logged data has every blob, at any depth, replaced by the string
  ``"(blob)"`` (SensorBee's ``data.Summarize``: the text stays JSON-like, tuples with images stay short).
- A *destinationless* tuple is one a source emitted while nothing read it (no stream, sink or SELECT):
  SensorBee counts it in the source's ``num_dropped`` and, only with ``log_destinationless_tuples``,
  reports it as a dropped tuple (event ``output``, error ``no output destination is connected``) — to
  ``dropped_tuples`` and, when ``log_dropped_tuples`` is also set, to the log.
"""
from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import dataclass
from typing import Any

from sbpy.bql.jsonio import to_json

drop_log = logging.getLogger("sbpy.dropped")

MESSAGE = "A tuple was dropped from the topology"
DESTINATIONLESS_ERROR = "no output destination is connected"


def summarize(value: Any) -> Any:
    """``value`` with every blob replaced by ``"(blob)"`` (maps and arrays copied, never changed)."""
    if isinstance(value, (bytes, bytearray)):
        return "(blob)"
    if isinstance(value, dict):
        return {k: summarize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [summarize(v) for v in value]
    return value


def _json(value: Any) -> str:
    try:
        return to_json(value)
    except Exception:  # noqa: BLE001 - not a BQL value (a plugin's own object): still say something
        return repr(value)


@dataclass(frozen=True)
class DropLogging:
    """The three options, read once from the server configuration's ``logging`` section."""

    log_dropped: bool = False
    log_destinationless: bool = False
    summarize: bool = False

    @classmethod
    def of(cls, logging_config: Any) -> DropLogging:
        """From a ``config.LoggingConfig`` (None: every option off, as SensorBee's defaults)."""
        if logging_config is None:
            return cls()
        return cls(bool(logging_config.log_dropped_tuples), bool(logging_config.log_destinationless_tuples),
                   bool(logging_config.summarize_dropped_tuples))

    def line(self, node_type: str, node_name: str, event_type: str, data: Any, error: str | None,
             ts: _dt.datetime | None = None) -> str:
        """The log line of one dropped tuple."""
        shown = summarize(data) if self.summarize else data
        parts = [f"{MESSAGE}: node_type={node_type} node_name={node_name} event_type={event_type}"]
        if error:
            parts.append(f"err={error}")
        stamp = f'"timestamp":{_json(ts)},' if ts is not None else ""
        parts.append(f"tuple={{{stamp}\"data\":{_json(shown)}}}")
        return " ".join(parts)

    def dropped(self, node_type: str, node_name: str, event_type: str, data: Any, error: str | None,
                ts: _dt.datetime | None = None) -> None:
        """Log one dropped tuple when ``log_dropped_tuples`` is on."""
        if self.log_dropped:
            drop_log.info("%s", self.line(node_type, node_name, event_type, data, error, ts))
