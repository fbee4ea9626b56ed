"""The MQTT connection of the ``mqtt`` source and sink: broker addresses, the parameters both share,
and a paho-mqtt client on its own network thread that reconnects by itself.

Parameters (SensorBee's ``gopkg.in/sensorbee/mqtt.v1``; unknown ones are ignored):

- ``broker``: ``"scheme://host:port"`` (default ``"tcp://127.0.0.1:1883"``); the old ``"host:port"``
  and a bare ``"host"`` (port 1883) are read as ``tcp``. Schemes: ``tcp``/``mqtt``, ``ssl``/``tls``/
  ``mqtts`` (TLS with the system's CAs), ``ws``/``wss`` (MQTT over WebSocket).
- ``user`` / ``password`` (default none), ``client_id`` (default: one paho makes up).
- ``reconnect_min_time`` / ``reconnect_max_time`` (seconds or a Go duration; default 1 s and 30 s):
  after a lost or failed connection the client waits ``reconnect_min_time``, doubling each failure up
  to ``reconnect_max_time``.

>>> parse_broker("localhost:1883"), parse_broker("example.org"), parse_broker("ssl://h")
('tcp://localhost:1883', 'tcp://example.org:1883', 'ssl://h:8883')
>>> parse_broker("host:")
Traceback (most recent call last):
...
ValueError: invalid broker URL 'host:'
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import paho.mqtt.client as paho

from .sources import parse_duration

log = logging.getLogger("sbpy.mqtt")

DEFAULT_BROKER = "tcp://127.0.0.1:1883"
KEEPALIVE = 60
# scheme → (paho transport, TLS, default port)
_SCHEMES = {
    "tcp": ("tcp", False, 1883), "mqtt": ("tcp", False, 1883),
    "ssl": ("tcp", True, 8883), "tls": ("tcp", True, 8883), "mqtts": ("tcp", True, 8883),
    "ws": ("websockets", False, 80), "wss": ("websockets", True, 443),
}


@dataclass(frozen=True)
class Broker:
    """A parsed broker address."""

    scheme: str
    host: str
    port: int

    @property
    def transport(self) -> str:
        return _SCHEMES[self.scheme][0]

    @property
    def tls(self) -> bool:
        return _SCHEMES[self.scheme][1]

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def broker_address(text: str) -> Broker:
    """``text`` as a ``Broker`` (SensorBee's ``adjustOldBrokerURL`` plus default ports)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("broker must be a non-empty string")
    text = text.strip()
    url = text if "://" in text else "tcp://" + text
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(f"invalid broker URL '{text}'") from None
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError(f"unsupported broker scheme '{scheme}' (expected one of {', '.join(_SCHEMES)})")
    if not parts.hostname or parts.netloc.endswith(":") or parts.path not in ("", "/"):
        raise ValueError(f"invalid broker URL '{text}'")
    return Broker(scheme, parts.hostname, port if port is not None else _SCHEMES[scheme][2])


def parse_broker(text: str) -> str:
    """The normalized text of a broker address."""
    return str(broker_address(text))


def string_param(params: dict[str, Any], name: str, default: str | None = None) -> str | None:
    """A string parameter (``ValueError`` naming it when it is not one)."""
    value = params.get(name, default)
    if value is not default and not isinstance(value, str):
        raise ValueError(f"{name} must be a string")
    return value


def qos_param(params: dict[str, Any], name: str, default: int = 0) -> int:
    """A QoS parameter: the integer 0 (at most once), 1 (at least once) or 2 (exactly once)."""
    value = params.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2:
        raise ValueError(f"{name} must be 0, 1 or 2")
    return value


@dataclass(frozen=True)
class ConnectionParams:
    """The connection parameters shared by the source and the sink."""

    broker: Broker
    user: str | None
    password: str | None
    client_id: str
    reconnect_min: float
    reconnect_max: float

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ConnectionParams:
        reconnect_min = parse_duration(params.get("reconnect_min_time", 1), "reconnect_min_time")
        reconnect_max = parse_duration(params.get("reconnect_max_time", 30), "reconnect_max_time")
        if reconnect_max < reconnect_min:
            raise ValueError("reconnect_max_time must not be less than reconnect_min_time")
        return cls(broker=broker_address(string_param(params, "broker", DEFAULT_BROKER) or ""),
                   user=string_param(params, "user") or None,
                   password=string_param(params, "password"),
                   client_id=string_param(params, "client_id", "") or "",
                   reconnect_min=reconnect_min, reconnect_max=reconnect_max)


class MqttConnection:
    """A paho client whose network thread (``start``) connects, keeps the connection and reconnects
    with backoff. ``subscription = (topic, qos)`` is (re)subscribed on every connection; messages go
    to ``on_message(topic, payload)`` on the network thread. ``close`` disconnects and joins it."""

    def __init__(self, params: ConnectionParams, on_message: Callable[[str, bytes], None] | None = None,
                 subscription: tuple[str, int] | None = None):
        self.params = params
        self.subscription = subscription
        self._on_message = on_message
        self._connected = threading.Event()
        self._attempted = threading.Event()  # a first connection attempt succeeded or failed
        self._subscribed = threading.Event()  # the broker acknowledged the subscription (this connection)
        self.last_error: str | None = None
        self.closing = False
        broker = params.broker
        client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=params.client_id,
                             transport=broker.transport, reconnect_on_failure=True)
        if broker.tls:
            client.tls_set()
        if params.user is not None:
            client.username_pw_set(params.user, params.password)
        client.reconnect_delay_set(max(0.1, params.reconnect_min), max(0.1, params.reconnect_max))  # type: ignore[arg-type]
        client.on_connect = self._connected_cb
        client.on_connect_fail = self._connect_failed_cb
        client.on_disconnect = self._disconnected_cb
        client.on_message = self._message_cb
        client.on_subscribe = self._subscribed_cb
        self.client = client

    # ------------------------------------------------------------ life cycle

    def start(self, connect_now: bool = False) -> MqttConnection:
        """Start the network thread, which connects and reconnects until ``close``. ``connect_now``
        opens the connection here first: a broker that cannot be reached raises ``ConnectionError``."""
        broker = self.params.broker
        if connect_now:
            try:
                self.client.connect(broker.host, broker.port, KEEPALIVE)
            except OSError as err:
                raise ConnectionError(f"cannot connect to the MQTT broker {broker}: "
                                      f"{err.strerror or err}") from None
        else:
            self.client.connect_async(broker.host, broker.port, KEEPALIVE)
        self.client.loop_start()
        return self

    def wait_connected(self, timeout: float) -> bool:
        """True once connected; False after ``timeout`` or once the first attempt has failed."""
        if not self._attempted.wait(timeout):
            return False
        return self._connected.is_set()

    def wait_until_connected(self, timeout: float) -> bool:
        """True once connected (again), False after ``timeout``."""
        return self._connected.wait(timeout)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def close(self) -> None:
        """Disconnect (after sending what is queued) and stop the network thread."""
        self.closing = True
        try:
            self.client.disconnect()
        finally:
            self.client.loop_stop()
            self._connected.clear()

    # ------------------------------------------------------------ paho callbacks (network thread)

    def _connected_cb(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if reason.is_failure:
            self.last_error = f"the broker refused the connection: {reason}"
            log.warning("MQTT broker %s: %s", self.params.broker, self.last_error)
            self._attempted.set()
            return
        self.last_error = None
        if self.subscription is not None:
            client.subscribe(self.subscription[0], qos=self.subscription[1])
        log.info("connected to MQTT broker %s", self.params.broker)
        self._connected.set()
        self._attempted.set()

    def _connect_failed_cb(self, client: Any, userdata: Any) -> None:
        self.last_error = f"cannot connect to {self.params.broker}"
        log.info("MQTT broker %s: %s; retrying", self.params.broker, self.last_error)
        self._attempted.set()

    def _subscribed_cb(self, client: Any, userdata: Any, mid: Any, reasons: Any, properties: Any) -> None:
        failed = [r for r in reasons if r.is_failure]
        if failed:
            self.last_error = f"the broker refused the subscription: {failed[0]}"
            log.warning("MQTT broker %s: %s", self.params.broker, self.last_error)
        else:
            self._subscribed.set()

    def _disconnected_cb(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        self._connected.clear()
        self._subscribed.clear()
        if not self.closing:
            self.last_error = f"connection lost: {reason}"
            log.info("lost the connection to MQTT broker %s (%s); reconnecting", self.params.broker, reason)

    def _message_cb(self, client: Any, userdata: Any, message: Any) -> None:
        if self._on_message is not None:
            self._on_message(message.topic, bytes(message.payload))

    def status(self) -> dict[str, Any]:
        """``broker``, ``connected`` and the last connection error, if any."""
        out: dict[str, Any] = {"broker": str(self.params.broker), "connected": self.connected}
        if self.subscription is not None:
            out["subscribed"] = self._subscribed.is_set()
        if self.last_error:
            out["last_error"] = self.last_error
        return out
