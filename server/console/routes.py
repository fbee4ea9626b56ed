"""The web console's routes: the page at ``/``, its assets under ``/console/assets/`` and its data
under ``/api/v1/console/`` (so ``network.auth_token`` guards the data as it guards the REST API; the
page itself holds no data and asks for the token when the API answers 401).

- ``GET /``: ``static/index.html`` (plain HTML; ``console.js`` draws the graph as SVG; no CDN, no
  inline script or style, a ``Content-Security-Policy`` that allows this server only);
- ``GET /api/v1/console/events?topology=<name>&interval=<seconds>``: the live feed
  (``text/event-stream``, ``events.ConsoleFeed``): one step at once, then one every ``interval``
  seconds (default 1, clamped to [0.1, 10]) until the client goes away;
- ``GET /api/v1/console/topologies/{name}``: one ``snapshot.topology_snapshot`` (no rates);
- ``GET /api/v1/console/topologies/{name}/streams/{stream}/explain``: ``snapshot.stream_explain``
  (404 E0001 for an unknown topology or stream).

Start, pause and resume buttons post BQL (``RESUME SOURCE s``, ``PAUSE SOURCE s``, ``REWIND SOURCE
s``) to SensorBee's own ``POST /api/v1/topologies/{name}/queries``; the REST paths are unchanged.
"""
from __future__ import annotations

import logging
from importlib import resources
from typing import Any

import anyio
from fastapi import APIRouter, FastAPI, Query, Request, Response
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import Send

from ..api import API_PREFIX
from ..api.errors import not_found
from ..api.schemas import ERROR_RESPONSES, json_response
from ..api.streaming import ClientStream
from ..api.topologies import TopologyDep
from .events import ConsoleFeed
from .snapshot import stream_explain, topology_snapshot

log = logging.getLogger("sbpy.server.console")

PAGE_URL = "/"
ASSETS_URL = "/console/assets"
STATIC = ("sbpy.server.console", "static")  # (package, folder inside it)
MIN_INTERVAL, MAX_INTERVAL, DEFAULT_INTERVAL = 0.1, 10.0, 1.0
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'none'",
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
}


class EventStream(ClientStream):
    """``text/event-stream`` of ``feed``: a step at once, then one every ``interval`` seconds. A task
    watches for the client's disconnect; either way the feed is closed when the response ends."""

    media_type = "text/event-stream"

    def __init__(self, feed: ConsoleFeed, interval: float):
        self.feed = feed
        self.interval = interval
        self.status_code = 200
        self.background = None
        self.init_headers({"cache-control": "no-cache", "x-accel-buffering": "no"})

    async def _stream(self, send: Send) -> None:
        await send({"type": "http.response.body", "body": b"retry: 2000\n\n", "more_body": True})
        while True:
            events = await anyio.to_thread.run_sync(self.feed.tick)
            await send({"type": "http.response.body", "body": b"".join(events), "more_body": True})
            await anyio.sleep(self.interval)

    async def _finish(self) -> None:
        self.feed.close()


router = APIRouter(prefix=f"{API_PREFIX}/console", tags=["console"], responses=ERROR_RESPONSES)


@router.get("/events", response_class=Response,
            responses={200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"}})
def console_events(request: Request, topology: str | None = None,
                   interval: float = Query(DEFAULT_INTERVAL, description="seconds between steps")) -> Response:
    """The console's live feed (``topologies``, ``topology`` and ``gone`` events); see
    ``sbpy.server.console.events``."""
    interval = min(MAX_INTERVAL, max(MIN_INTERVAL, interval))
    return EventStream(ConsoleFeed(request.app.state.manager, topology), interval)


@router.get("/topologies/{topology_name}")
def console_topology(topology: TopologyDep) -> Any:
    """One snapshot of the topology: nodes with counters and state, edges, queries (no rates)."""
    return json_response(topology_snapshot(topology))


@router.get("/topologies/{topology_name}/streams/{stream}/explain")
def console_explain(topology: TopologyDep, stream: str) -> Any:
    """The EXPLAIN plan of a stream: its running query's, else what ``EXPLAIN CREATE STREAM`` gives."""
    try:
        return json_response(stream_explain(topology, stream))
    except LookupError:
        raise not_found("The stream was not found") from None


def _page() -> str:
    return resources.files(STATIC[0]).joinpath(STATIC[1], "index.html").read_text(encoding="utf-8")


def install_console(app: FastAPI) -> None:
    """Add the console's page, assets and data routes to ``app``."""
    app.mount(ASSETS_URL, StaticFiles(packages=[STATIC]), name="console-assets")
    app.include_router(router)

    @app.get(PAGE_URL, include_in_schema=False)
    def console_page() -> HTMLResponse:
        return HTMLResponse(_page(), headers=PAGE_HEADERS)
