"""A real sbpy server for tests and benchmarks: uvicorn in a thread on a free loopback port.

Lives outside conftest.py so that test modules and bench scripts can import it by a unique name
(several conftest.py files exist under tests/).
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import uvicorn

from sbpy.server.app import create_app
from sbpy.server.config import Config
from sbpy.server.context import ServerContext


@dataclass
class RunningServer:
    """A server started by the fixture: ``url`` is ``http://127.0.0.1:<port>/``."""

    url: str
    config: Config
    app: Any
    uvicorn_server: uvicorn.Server
    thread: threading.Thread

    @property
    def api(self) -> str:
        return self.url + "api/v1"

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.api, timeout=30, **kwargs)

    def stop(self) -> None:
        self.uvicorn_server.should_exit = True
        self.thread.join(timeout=30)


def start_server(config: Config, data_dir: Any, topology_factory: Callable | None = None,
                 restore_hold: Callable[[], None] | None = None, wait_restored: bool = True) -> RunningServer:
    """Start ``create_app(config)`` on a free 127.0.0.1 port; returns once it accepts requests and (with
    ``wait_restored``) has restored its topologies in the background."""
    app = create_app(config, context_factory=lambda cfg: ServerContext(data_dir=data_dir, config=cfg),
                     topology_factory=topology_factory, restore_hold=restore_hold)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the test server failed to start")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError("the test server did not start in time")
        time.sleep(0.01)
    if wait_restored and not app.state.restore.done.wait(120):
        server.should_exit = True
        raise RuntimeError("the test server did not restore its topologies in time")
    return RunningServer(f"http://127.0.0.1:{port}/", config, app, server, thread)
