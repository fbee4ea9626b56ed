"""REST request metrics: an ASGI middleware counting requests and timing them for ``/metrics``.

Two metrics, labelled by ``method``, ``route`` and ``status``:

- ``sbpy_http_requests_total``: requests answered;
- ``sbpy_http_request_duration_seconds``: a histogram of the time from the request's arrival until
  its response was sent completely (for a streamed SELECT: until the stream ended).

``route`` is the route template (``/api/v1/topologies/{topology_name}/queries``), never the raw path,
so topology and node names do not multiply the series; a path no route matches is ``unmatched``.
Requests that ``sbpy.server.auth`` refuses (401, 403, ...) are counted too: the middleware is the
outermost one and finds every request's route itself (``RouteTable``). ``status`` is the status the
response started with (500 when the app raised before answering).

A pure ASGI middleware (not ``BaseHTTPMiddleware``), like ``auth.RequestContextMiddleware``, so streamed
responses pass through untouched.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.routing import Mount, Route, compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UNMATCHED = "unmatched"
LABELS = ("method", "route", "status")
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class RequestMetrics:
    """The request counter and latency histogram of one app, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry):
        self.requests = Counter("sbpy_http_requests", "REST requests answered, by method, route template "
                                "and status.", LABELS, registry=registry)
        self.duration = Histogram("sbpy_http_request_duration_seconds", "Time from a REST request's "
                                  "arrival until its response was sent completely, by method, route template "
                                  "and status.", LABELS, buckets=DURATION_BUCKETS, registry=registry)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        labels = (method, route, str(status))
        self.requests.labels(*labels).inc()
        self.duration.labels(*labels).observe(seconds)


class RouteTable:
    """Maps a request path to the template of the route serving it, from templates alone.

    Built once from the app: the paths of its OpenAPI document (every documented route, with the
    ``/api/v1`` prefix of included routers) plus its top-level routes and mounts (the docs pages and
    their assets, ``/openapi.json``). Matching does not rely on the router having annotated the scope
    (FastAPI's nested included routers do not always do so), so a request refused before routing gets
    its route as well. A mount's files all count as the mount's path; other paths are ``unmatched``.
    """

    def __init__(self, templates: Iterable[str], mounts: Iterable[str] = ()):
        entries: dict[str, re.Pattern[str]] = {}
        for template in templates:
            entries.setdefault(template, compile_path(template)[0])
        for mount in mounts:
            entries.setdefault(mount, compile_path(mount.rstrip("/") + "/{path:path}")[0])
        self._entries = list(entries.items())

    @classmethod
    def from_app(cls, app: Any) -> RouteTable:
        """The table of a FastAPI ``app`` (call it once every route is added: after startup)."""
        templates = list(app.openapi().get("paths", {}))
        mounts = []
        for route in app.routes:
            if isinstance(route, Mount):
                mounts.append(route.path)
            elif isinstance(route, Route):
                templates.append(route.path)
        return cls(templates, mounts)

    def template(self, path: str) -> str:
        for template, regex in self._entries:
            if regex.match(path):
                return template
        return UNMATCHED


class RequestMetricsMiddleware:
    """Count and time every HTTP request in ``metrics`` (other scope types pass through)."""

    def __init__(self, app: ASGIApp, metrics: RequestMetrics):
        self.app = app
        self.metrics = metrics
        self._routes: RouteTable | None = None  # built at the first request, once every route exists

    def route_of(self, scope: Scope) -> str:
        """The route template of the request (its path less the app's ``root_path``)."""
        if self._routes is None:
            self._routes = RouteTable.from_app(scope["app"])
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        return self._routes.template(path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        route = self.route_of(scope)  # before the call: a mount changes the scope's root_path
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            self.metrics.observe(scope["method"], route, status, time.perf_counter() - started)
