"""The ``mqtt`` source: subscribes to a topic of an MQTT broker and emits one tuple per message.

As SensorBee's mqtt plugin, by default each tuple is ``{"topic": <the message's topic>, "payload":
<blob>}`` (parse it in BQL: ``SELECT RSTREAM decode_json(payload) AS * FROM src [RANGE 1 TUPLES]``).
With ``payload_format = "json"`` the payload must be a JSON object, whose fields are the tuple;
``topic_field`` then names a field to add the topic in. A payload that is not JSON, or not an object,
is dropped and reported on ``dropped_tuples`` with the message's topic and payload.

Parameters, besides the connection's (``mqtt_client``: ``broker``, ``user``, ``password``,
``client_id``, ``reconnect_min_time``, ``reconnect_max_time``):

- ``topic`` (required): the topic filter to subscribe to, wildcards allowed (``"sensors/#"``).
- ``qos`` (0, 1 or 2; default 0): the subscription's QoS.
- ``payload_format`` (``"blob"`` or ``"json"``; default ``"blob"``) and ``topic_field`` (see above).

Example::

    CREATE SOURCE s TYPE mqtt WITH broker = "localhost:1883", topic = "sensors/#", qos = 1,
        payload_format = "json", topic_field = "topic";

A live feed: the source does not rewind, and after a server restart it takes the messages that
arrive from then on. The broker connection lives on paho's network thread, which hands messages over
a bounded queue to the source's thread (``QUEUE_SIZE``); while the source is paused that queue fills
and the network thread waits, so the broker may end an idle connection, which is then reopened on
RESUME. The subscription has a clean session: messages sent while disconnected are not replayed, and
a QoS 1 or 2 message is acknowledged once queued, before it is journaled (a crash loses the queue).
"""
from __future__ import annotations

import logging
import queue
from typing import Any

from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.jsonio import from_json

from .mqtt_client import ConnectionParams, MqttConnection, qos_param, string_param

log = logging.getLogger("sbpy.mqtt")

QUEUE_SIZE = 10000
PAYLOAD_FORMATS = ("blob", "json")


class MqttSource:
    """``mqtt``: see the module docstring."""

    rewindable = False

    def __init__(self, params: dict[str, Any]):
        topic = params.get("topic")
        if topic is None:
            raise ValueError("topic parameter is missing")
        if not isinstance(topic, str) or not topic:
            raise ValueError("topic must be a non-empty string")
        self.topic = topic
        self.qos = qos_param(params, "qos")
        self.payload_format = string_param(params, "payload_format", "blob")
        if self.payload_format not in PAYLOAD_FORMATS:
            raise ValueError(f"payload_format must be one of {', '.join(PAYLOAD_FORMATS)}")
        self.topic_field = string_param(params, "topic_field", "") or None
        if self.topic_field is not None and self.payload_format != "json":
            raise ValueError('topic_field needs payload_format = "json" (blob tuples always have "topic")')
        self.connection_params = ConnectionParams.from_params(params)
        self.messages: queue.Queue[tuple[str, bytes]] = queue.Queue(maxsize=QUEUE_SIZE)
        self.connection: MqttConnection | None = None
        self.num_dropped = 0

    # ------------------------------------------------------------ messages to tuples

    def to_tuple(self, topic: str, payload: bytes) -> tuple[dict[str, Any] | None, str | None]:
        """``(tuple, None)`` for a message, or ``(None, error)`` when its payload cannot be one."""
        if self.payload_format == "blob":
            return {"topic": topic, "payload": payload}, None
        try:
            data = from_json(payload)
        except BQLEvaluationError as e:
            return None, f"mqtt source: topic '{topic}': cannot parse a payload: {e}"
        if not isinstance(data, dict):
            return None, f"mqtt source: topic '{topic}': a payload is not a JSON object"
        if self.topic_field is not None:
            data[self.topic_field] = topic
        return data, None

    def _on_message(self, topic: str, payload: bytes) -> None:
        """paho's network thread: queue the message, waiting while the queue is full (paused)."""
        while True:
            try:
                self.messages.put((topic, payload), timeout=0.1)
                return
            except queue.Full:
                if self.connection is None or self.connection.closing:
                    return

    # ------------------------------------------------------------ running

    def run(self, ctx: Any) -> None:
        """Connect, subscribe, and emit every message until the source stops."""
        self.connection = MqttConnection(self.connection_params, self._on_message, (self.topic, self.qos))
        self.connection.start()
        try:
            while not ctx.stopping:
                try:
                    topic, payload = self.messages.get(timeout=0.1)
                except queue.Empty:
                    ctx.flush()
                    continue
                data, error = self.to_tuple(topic, payload)
                if data is None:
                    self.num_dropped += 1
                    log.warning("%s", error)
                    ctx.report_dropped(error, {"topic": topic, "payload": payload})
                else:
                    ctx.emit(data)
                if self.messages.empty():
                    ctx.flush()
        finally:
            self.connection.close()

    def status(self) -> dict[str, Any]:
        """The ``source`` part of the node status: broker, topic, connection, queued and dropped."""
        out: dict[str, Any] = {"broker": str(self.connection_params.broker), "topic": self.topic,
                               "connected": False, "subscribed": False}
        if self.connection is not None:
            out.update(self.connection.status())
        out["num_queued"] = self.messages.qsize()
        out["num_dropped"] = self.num_dropped
        return out
