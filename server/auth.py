"""ASGI middleware: number every request (the ``request_id`` of error envelopes) and, when
``network.auth_token`` is set, require ``Authorization: Bearer <token>`` on the API.

A pure ASGI middleware (not ``BaseHTTPMiddleware``) so streamed SELECT responses pass through
untouched and client disconnects stay visible to them.
"""
from __future__ import annotations

import itertools
import secrets
import threading

from starlette.types import ASGIApp, Receive, Scope, Send

from .api.errors import UNAUTHORIZED, envelope

PROTECTED_PREFIX = "/api/"


class RequestContextMiddleware:
    """Give each HTTP request ``scope["state"]["request_id"]`` and check the bearer token."""

    def __init__(self, app: ASGIApp, auth_token: str | None = None):
        self.app = app
        self.auth_token = auth_token
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with self._lock:
            rid = next(self._ids)
        scope.setdefault("state", {})["request_id"] = rid
        if self.auth_token and scope["path"].startswith(PROTECTED_PREFIX) and not self._authorized(scope):
            await self._deny(str(rid), send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        assert self.auth_token is not None
        for key, value in scope.get("headers", []):
            if key == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                if scheme.lower() == "bearer":
                    return secrets.compare_digest(token.strip().encode(), self.auth_token.encode())
        return False

    async def _deny(self, rid: str, send: Send) -> None:
        body = envelope(rid, UNAUTHORIZED, "The request requires a valid bearer token.")
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="sbpy"'),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})
