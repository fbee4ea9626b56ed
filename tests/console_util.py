"""Helpers of the web console tests (tests/server/test_console*.py, tests/e2e/test_console_browser.py): a
Spark-free server whose topologies run on the local runner, a demo topology (file source → stream →
sink, plus a stream nothing reads) and a reader of the console's Server-Sent Events."""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

_SERVER_TESTS = str(Path(__file__).parent / "server")
if _SERVER_TESTS not in sys.path:  # local_runner.py lives beside the server tests
    sys.path.append(_SERVER_TESTS)

from local_runner import start_local
from sbpy.server.topology import Topology

ROWS = 60  # rows of the demo file: a = 0..59, z = a % 4 (12 / z fails for a quarter of them)


def local_topology(name: str, ctx: Any) -> Topology:
    """A topology whose queries run on the Spark-free local runner."""
    return Topology(name, ctx, query_starter=start_local)


def start_local_server(server_factory: Callable[..., Any], tmp_path: Path, **network: Any) -> Any:
    """A server with file roots under ``tmp_path`` and local-runner topologies."""
    config: dict[str, Any] = {"storage": {"file_roots": [str(tmp_path)]}}
    if network:
        config["network"] = network
    return server_factory(config, topology_factory=local_topology)


def demo_script(tmp_path: Path, paused: bool = False, interval: str | None = None, repeat: int = 0) -> str:
    """BQL of the demo topology: source ``s`` (the demo file), stream ``x`` (``12 / z`` where
    ``a % 3 = 0``: errors where ``z = 0``), stream ``idle`` that nothing reads, sink ``k``."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"a": i, "z": i % 4}) + "\n" for i in range(ROWS)))
    options = [f'path = "{path}"']
    if interval is not None:
        options.append(f'interval = "{interval}"')
    if repeat:
        options.append(f"repeat = {repeat}")
    return f"""CREATE {"PAUSED " if paused else ""}SOURCE s TYPE file WITH {", ".join(options)};
        CREATE STREAM x AS SELECT RSTREAM a, 12 / z AS q FROM s [RANGE 1 TUPLES] WHERE a % 3 = 0;
        CREATE STREAM idle AS SELECT RSTREAM * FROM s [RANGE 1 TUPLES];
        CREATE SINK k TYPE file WITH path = "{tmp_path / 'out.jsonl'}";
        INSERT INTO k FROM x;"""


def expected_counts() -> dict[str, int]:
    """What one pass of the demo file does: x reads every row, emits those with a % 3 = 0 and z != 0,
    fails on those with a % 3 = 0 and z = 0."""
    picked = [a for a in range(ROWS) if a % 3 == 0]
    failed = [a for a in picked if a % 4 == 0]
    return {"rows": ROWS, "x_out": len(picked) - len(failed), "x_errors": len(failed)}


def create_demo(client: httpx.Client, tmp_path: Path, name: str = "t", **options: Any) -> None:
    assert client.post("/topologies", json={"name": name}).status_code == 200
    r = client.post(f"/topologies/{name}/queries", json={"queries": demo_script(tmp_path, **options)})
    assert r.status_code == 200, r.text


@dataclass
class Event:
    name: str
    id: int | None
    data: Any


class EventReader:
    """Reads ``text/event-stream`` events from an open streaming response."""

    def __init__(self, response: httpx.Response):
        self.response = response
        self._lines = response.iter_lines()

    def next(self) -> Event:
        name, event_id, data = "message", None, []
        for line in self._lines:
            if line == "":
                if data:
                    return Event(name, event_id, json.loads("\n".join(data)))
                name, event_id, data = "message", None, []
            elif line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("id:"):
                event_id = int(line[3:].strip())
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        raise EOFError("the event stream ended")

    def until(self, pred: Callable[[Event], bool], timeout: float = 30) -> Event:
        """The first event satisfying ``pred`` (events come every interval: the deadline is checked
        at each one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            event = self.next()
            if pred(event):
                return event
        raise AssertionError("no event matched in time")


@contextmanager
def console_events(api: str, headers: dict[str, str] | None = None, **params: Any) -> Iterator[EventReader]:
    """Open ``GET {api}/console/events`` with ``params``; the response must be an event stream."""
    with httpx.stream("GET", f"{api}/console/events", params=params, headers=headers, timeout=30) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        yield EventReader(r)


def node_of(snapshot: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in snapshot["nodes"] if n["name"] == name)
