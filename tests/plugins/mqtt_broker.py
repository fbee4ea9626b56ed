"""A real MQTT broker for the connector tests: Debian's ``mosquitto`` on a free loopback port, and a
paho subscriber that collects what it receives.

``.ci/run`` installs mosquitto; without it the tests are skipped on a developer's machine and fail
under CI (``CI`` set), so a broker missing in CI cannot pass unnoticed.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from loopback import free_port as _free_port


def mosquitto_binary() -> str | None:
    return shutil.which("mosquitto") or next(
        (p for p in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto") if os.access(p, os.X_OK)), None)


def wait_for(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``pred`` until it holds or ``timeout`` passes (bounded: the tests never sleep blindly)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.01)
    return pred()



def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Broker:
    """A mosquitto process listening on ``127.0.0.1:port`` (default: a free port; ``stop`` ends it and
    waits)."""

    def __init__(self, workdir: Path, port: int | None = None):
        binary = mosquitto_binary()
        if binary is None:
            if os.environ.get("CI"):
                pytest.fail("mosquitto is not installed (.ci/run installs it)")
            pytest.skip("mosquitto is not installed (apt-get install mosquitto)")
        self.port = port or _free_port()
        conf = workdir / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                        "log_dest stderr\n")
        self.log = open(workdir / "mosquitto.log", "wb")  # noqa: SIM115 - open while the broker runs
        self.proc = subprocess.Popen([binary, "-c", str(conf)], stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_for(lambda: _accepts(self.port) or self.proc.poll() is not None):
            self.stop()
            raise RuntimeError("mosquitto did not start listening")
        if self.proc.poll() is not None:
            self.log.close()
            raise RuntimeError("mosquitto exited: " + (workdir / "mosquitto.log").read_text())

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


class Client:
    """A paho client on the broker: ``publish`` (waits until sent) and, after ``subscribe``, the
    received ``(topic, payload)`` pairs in ``messages``."""

    def __init__(self, broker: Broker):
        self.messages: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()
        self.subscribed = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *args: self.subscribed.set()
        self.client.connect("127.0.0.1", broker.port)
        self.client.loop_start()

    def _on_message(self, client: object, userdata: object, message: paho.MQTTMessage) -> None:
        with self.lock:
            self.messages.append((message.topic, bytes(message.payload)))

    def subscribe(self, topic: str, qos: int = 1) -> None:
        self.subscribed.clear()
        self.client.subscribe(topic, qos)
        assert self.subscribed.wait(10), "the broker did not acknowledge the subscription"

    def publish(self, topic: str, payload: bytes | str, qos: int = 1) -> None:
        info = self.client.publish(topic, payload, qos=qos)
        info.wait_for_publish(10)
        assert info.is_published()

    def received(self) -> list[tuple[str, bytes]]:
        with self.lock:
            return list(self.messages)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
