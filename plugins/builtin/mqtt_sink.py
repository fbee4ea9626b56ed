"""The ``mqtt`` sink: publishes one MQTT message per tuple.

As SensorBee's mqtt plugin, a tuple names its message: the ``topic`` field (a string; else
``default_topic``), the ``payload`` field and an optional ``qos`` field (0, 1 or 2; else
``default_qos``). A string payload is sent as its UTF-8 bytes, a blob as is, an array or a map as
JSON (``sbpy.bql.jsonio``: ``2`` stays ``2``, ``2.0`` stays ``2.0``); any other payload type is an
error. ``payload_field = "*"`` (an sbpy extension) publishes the whole tuple as a JSON object.

Parameters, besides the connection's (``mqtt_client``): ``topic_field``, ``payload_field``,
``qos_field`` (field paths; defaults ``topic``, ``payload``, ``qos``), ``default_topic`` (non-empty;
default none: a tuple without a topic is an error), ``default_qos`` (default 0), ``retain`` (bool,
default false), ``publish_timeout`` (duration, default 10 s).

Example::

    CREATE SINK out TYPE mqtt WITH broker = "localhost:1883", default_topic = "alerts",
        payload_field = "*", default_qos = 1;

CREATE SINK connects at once and fails when the broker cannot be reached (as SensorBee's); a sink
restored at server start connects in the background instead. Afterwards the client reconnects by
itself. A tuple that cannot be a message (no topic, a bad payload or QoS) is skipped with a warning
and counted in the sink status's ``num_dropped``; the others of its batch are published. A batch
whose messages cannot be handed to the broker (no connection within ``publish_timeout``, QoS 1 and 2
messages unacknowledged by then) fails as a whole: the sink node counts its tuples as errors.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any

from sbpy.bql.errors import BQLError
from sbpy.bql.jsonio import to_json_bytes
from sbpy.bql.spark.journal_segments import compile_path
from sbpy.bql.values import type_name
from sbpy.plugins.api import SinkType

from .mqtt_client import ConnectionParams, MqttConnection, qos_param, string_param
from .sources import parse_duration

log = logging.getLogger("sbpy.mqtt")

WHOLE_TUPLE = "*"
_MISSING = object()


def _field_path(params: dict[str, Any], name: str, default: str) -> list[str | int] | None:
    text = string_param(params, name, default)
    if text == WHOLE_TUPLE and name == "payload_field":
        return None
    try:
        return compile_path(text or "")
    except ValueError:
        raise ValueError(f"{name} is not a valid field path: '{text}'") from None


def _get(data: Any, steps: list[str | int]) -> Any:
    """The value at ``steps`` in ``data``, or ``_MISSING``."""
    for s in steps:
        if isinstance(s, int):
            if not isinstance(data, list) or not -len(data) <= s < len(data):
                return _MISSING
        elif not isinstance(data, dict) or s not in data:
            return _MISSING
        data = data[s]
    return data


class MessageError(ValueError):
    """A tuple that cannot be published (SensorBee's per-tuple write error)."""


class MessageFormat:
    """How the sink makes a message of a tuple: the field paths, ``default_topic``, ``default_qos``."""

    def __init__(self, params: dict[str, Any]):
        self.topic_path = _field_path(params, "topic_field", "topic")
        self.payload_path = _field_path(params, "payload_field", "payload")
        self.qos_path = _field_path(params, "qos_field", "qos")
        self.topic_field = string_param(params, "topic_field", "topic")
        default_topic = string_param(params, "default_topic")
        if default_topic == "":
            raise ValueError("empty default topic is not supported")
        self.default_topic = default_topic
        self.default_qos = qos_param(params, "default_qos")

    def message(self, data: dict[str, Any]) -> tuple[str, bytes, int]:
        """``(topic, payload, qos)`` of a tuple; ``MessageError`` when it cannot be published."""
        payload = data if self.payload_path is None else _get(data, self.payload_path)
        if payload is _MISSING:
            raise MessageError("payload field is missing")
        if isinstance(payload, str):
            body = payload.encode("utf-8")
        elif isinstance(payload, (bytes, bytearray)):
            body = bytes(payload)
        elif isinstance(payload, (list, dict)):
            body = to_json_bytes(payload)
        else:
            raise MessageError(f"data type '{type_name(payload)}' cannot be used as payload")
        topic = _get(data, self.topic_path)
        if topic is _MISSING:
            if self.default_topic is None:
                raise MessageError(f"topic field '{self.topic_field}' is missing")
            topic = self.default_topic
        elif not isinstance(topic, str):
            raise MessageError(f"topic must be a string, got '{type_name(topic)}'")
        qos = _get(data, self.qos_path)
        if qos is _MISSING:
            qos = self.default_qos
        elif isinstance(qos, bool) or not isinstance(qos, int):
            raise MessageError(f"qos must be an int, got '{type_name(qos)}'")
        elif not 0 <= qos <= 2:
            raise MessageError(f"wrong QoS: {qos}")
        return topic, body, qos


class MqttSink(SinkType):
    """``mqtt``: see the module docstring."""

    def __init__(self, params: dict[str, Any], recovering: bool = False):
        super().__init__(params, recovering)
        self.format = MessageFormat(params)
        retain = params.get("retain", False)
        if not isinstance(retain, bool):
            raise ValueError("retain must be a bool")  # noqa: TRY004 - parameter errors are ValueErrors
        self.retain = retain
        self.publish_timeout = parse_duration(params.get("publish_timeout", 10), "publish_timeout")
        self.num_published = 0
        self.num_dropped = 0
        self.lock = threading.Lock()
        self.connection = MqttConnection(ConnectionParams.from_params(params))
        self.connection.start(connect_now=not recovering)
        if not recovering and not self.connection.wait_connected(self.publish_timeout):
            error = self.connection.last_error or f"no answer within {self.publish_timeout:g} s"
            self.connection.close()
            raise ConnectionError(f"MQTT broker {self.connection.params.broker}: {error}")

    # ------------------------------------------------------------ writing

    def write(self, tuples: list[dict[str, Any]], batch: tuple[str, int] | None = None) -> None:
        """Publish the batch's messages, then wait (up to ``publish_timeout``) until paho has sent
        them (QoS 0) or the broker has acknowledged them (QoS 1 and 2). A replayed batch is skipped."""
        with self.lock:
            if batch is not None and self.written.get(batch[0], -1) >= batch[1]:
                return
            self._publish_all(tuples)
            if batch is not None:
                self.written[batch[0]] = batch[1]

    def write_tuple(self, data: dict[str, Any]) -> None:
        self._publish_all([data])

    def _publish_all(self, tuples: list[dict[str, Any]]) -> None:
        pending = []
        for data in tuples:
            try:
                topic, body, qos = self.format.message(data)
            except (ValueError, BQLError) as e:
                self.num_dropped += 1
                log.warning("mqtt sink: a tuple was not published: %s", e)
                continue
            pending.append(self._publish(topic, body, qos))
        deadline = time.monotonic() + self.publish_timeout
        for info in pending:
            info.wait_for_publish(max(0.0, deadline - time.monotonic()))
            if not info.is_published():
                raise TimeoutError(f"the MQTT broker {self.connection.params.broker} did not take a "
                                   f"message within {self.publish_timeout:g} s")
            self.num_published += 1

    def _publish(self, topic: str, body: bytes, qos: int) -> Any:
        if not self.connection.wait_until_connected(self.publish_timeout):
            raise ConnectionError(f"not connected to the MQTT broker {self.connection.params.broker}"
                                  + (f": {self.connection.last_error}" if self.connection.last_error else ""))
        return self.connection.client.publish(topic, body, qos=qos, retain=self.retain)

    def close(self) -> None:
        self.connection.close()

    def status(self) -> dict[str, Any]:
        """The ``sink`` part of the node status: broker, connection, published and dropped counts."""
        return {**self.connection.status(), "num_published": self.num_published, "num_dropped": self.num_dropped}
