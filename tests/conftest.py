"""Shared fixtures: a real sbpy server (uvicorn in a thread on a free loopback port).

``server`` runs the default app; ``server_factory(config_dict, topology_factory=...)`` starts more
(each stopped at the end of the test). The servers' contexts never start Spark unless a test asks.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sbpy.server.config import config_from_dict
from server_harness import RunningServer, start_server


@pytest.fixture
def server_factory(tmp_path) -> Iterator[Callable[..., RunningServer]]:
    """Start servers from config dicts; all are stopped at the end of the test."""
    started: list[RunningServer] = []

    def factory(config: dict[str, Any] | None = None, topology_factory: Callable | None = None,
                source_path: Any = None) -> RunningServer:
        cfg = config_from_dict(config or {}, source_path)
        running = start_server(cfg, tmp_path / f"data{len(started)}", topology_factory)
        started.append(running)
        return running

    yield factory
    for running in started:
        running.stop()


@pytest.fixture
def server(server_factory) -> RunningServer:
    """A server with the default config."""
    return server_factory()


@pytest.fixture
def collector_on() -> Iterator[None]:
    """CPython's cyclic collector enabled for the test, and left as it was found."""
    import gc

    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()
