"""ASGI middleware guarding every request: number it (the ``request_id`` of error envelopes), then
refuse what a hostile web page or client could do to a server on its default config.

In order, each refusal answered with SensorBee's error envelope:

1. a ``Host`` the server does not answer to → 400 J0008 (DNS rebinding: a page of ``evil.example``
   whose name now points at 127.0.0.1). Allowed: ``localhost``, ``127.0.0.1``, ``[::1]``, the listen
   host, ``network.allowed_hosts`` (``"*"`` allows any); on a wildcard bind (``:15601``) also any IP
   address and this machine's host names.
2. ``network.auth_token`` set and no matching ``Authorization: Bearer`` on ``/api/`` → 401 J0005.
3. a state-changing request (POST, PUT, PATCH, DELETE) with an ``Origin`` that is not the server's own
   (a loopback name or the listen host, at the port the request came to) nor in
   ``network.allowed_origins`` (``"*"`` allows any) → 403 J0006. No CORS headers are ever sent.
4. a state-changing request with a body not declared JSON (``application/json`` or ``*/*+json``;
   forms and ``text/plain`` are what a page can send without asking) → 415 J0007.
5. a body over ``network.max_request_bytes``: at once from ``Content-Length``, else while it streams in
   (bytes counted, never buffered here) → 413 J0009.

Before a refusal is answered, what the client still sends of the body is read and thrown away (up to
``DRAIN_BYTES``), so closing the connection cannot reset it under the client's feet.

A pure ASGI middleware (not ``BaseHTTPMiddleware``) so streamed SELECT responses pass through
untouched and client disconnects stay visible to them.
"""
from __future__ import annotations

import ipaddress
import itertools
import secrets
import socket
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .api.errors import (
    HOST_NOT_ALLOWED, ORIGIN_NOT_ALLOWED, TOO_LARGE, UNAUTHORIZED, UNSUPPORTED_MEDIA_TYPE,
    RequestTooLarge, envelope, too_large_message,
)
from .config import LOOPBACK_HOSTS, NetworkConfig

PROTECTED_PREFIX = "/api/"
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass(frozen=True)
class Rejection:
    """An answer given instead of calling the app."""

    status: int
    code: str
    message: str
    meta: dict[str, Any]
    headers: tuple[tuple[bytes, bytes], ...] = ()


@dataclass(frozen=True)
class RequestPolicy:
    """What the guard allows; ``from_network`` builds it from the ``network`` config section.
    ``hosts`` None: any Host; ``origins`` holds normalized origins (``"*"``: any)."""

    auth_token: str | None = None
    hosts: frozenset[str] | None = LOOPBACK_HOSTS
    any_ip_host: bool = False
    origin_hosts: frozenset[str] = LOOPBACK_HOSTS
    origins: frozenset[str] = frozenset()
    max_request_bytes: int | None = None

    @classmethod
    def from_network(cls, network: NetworkConfig) -> RequestPolicy:
        listen = network.host.lower()
        wildcard = listen in WILDCARD_HOSTS
        own = set(LOOPBACK_HOSTS) | ({listen} if not wildcard else set())
        hosts: set[str] | None = own | {split_host(h)[0] for h in network.allowed_hosts}
        if "*" in network.allowed_hosts:
            hosts = None
        elif wildcard:
            hosts |= _machine_names()
        return cls(auth_token=network.auth_token, hosts=None if hosts is None else frozenset(hosts),
                   any_ip_host=wildcard, origin_hosts=frozenset(own),
                   origins=frozenset(normalize_origin(o) for o in network.allowed_origins),
                   max_request_bytes=network.max_request_bytes)


def _machine_names() -> set[str]:
    names = {socket.gethostname().lower()}
    try:
        names.add(socket.getfqdn().lower())
    except OSError:
        pass
    return names


def split_host(value: str) -> tuple[str, int | None]:
    """``(name, port)`` of a Host header value (``[::1]:80``, ``example.com``); name lower-cased,
    brackets and a trailing dot removed; port None when absent or not a number."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name, port = value, ""
    return name.rstrip("."), int(port) if port.isdigit() else None


def normalize_origin(origin: str) -> str:
    """``scheme://host[:port]`` lower-cased without a trailing slash (``*`` and ``null`` kept)."""
    return origin.strip().lower().rstrip("/")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _headers(scope: Scope) -> dict[bytes, str]:
    return {k: v.decode("latin-1") for k, v in scope.get("headers", [])}


class RequestContextMiddleware:
    """Give each HTTP request ``scope["state"]["request_id"]`` and apply the ``RequestPolicy``."""

    def __init__(self, app: ASGIApp, policy: RequestPolicy | None = None):
        self.app = app
        self.policy = policy or RequestPolicy()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            if self._check_host(scope, _headers(scope)) or self._check_origin(scope, _headers(scope)):
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008})
                return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with self._lock:
            rid = next(self._ids)
        scope.setdefault("state", {})["request_id"] = rid
        headers = _headers(scope)
        rejection = (self._check_host(scope, headers) or self._check_auth(scope, headers)
                     or self._check_origin(scope, headers) or self._check_body(scope, headers))
        if rejection is not None:
            await _drain(receive)
            await _reject(str(rid), rejection, send)
            return
        limit = self.policy.max_request_bytes
        if limit is None:
            await self.app(scope, receive, send)
            return
        await self._call_limited(scope, receive, send, str(rid), limit)

    # ------------------------------------------------------------ checks

    def _check_host(self, scope: Scope, headers: dict[bytes, str]) -> Rejection | None:
        allowed = self.policy.hosts
        value = headers.get(b"host")
        if allowed is None or value is None:
            return None
        name, _ = split_host(value)
        if name in allowed or (self.policy.any_ip_host and _is_ip(name)):
            return None
        return Rejection(400, HOST_NOT_ALLOWED,
                         f"The server does not answer to the host name '{name}'; add it to "
                         "network.allowed_hosts in the server config to allow it.", {"host": name})

    def _check_auth(self, scope: Scope, headers: dict[bytes, str]) -> Rejection | None:
        token = self.policy.auth_token
        if not token or not scope["path"].startswith(PROTECTED_PREFIX):
            return None
        scheme, _, given = headers.get(b"authorization", "").partition(" ")
        if scheme.lower() == "bearer" and secrets.compare_digest(given.strip().encode(), token.encode()):
            return None
        return Rejection(401, UNAUTHORIZED, "The request requires a valid bearer token.", {},
                         ((b"www-authenticate", b'Bearer realm="sbpy"'),))

    def _check_origin(self, scope: Scope, headers: dict[bytes, str]) -> Rejection | None:
        origin = headers.get(b"origin")
        if origin is None or (scope["type"] == "http" and scope["method"] not in STATE_CHANGING):
            return None
        if self._origin_allowed(scope, headers, origin):
            return None
        return Rejection(403, ORIGIN_NOT_ALLOWED,
                         f"Requests from the web origin '{origin}' are not allowed; add it to "
                         "network.allowed_origins in the server config to allow it.", {"origin": origin})

    def _origin_allowed(self, scope: Scope, headers: dict[bytes, str], origin: str) -> bool:
        norm = normalize_origin(origin)
        if "*" in self.policy.origins or norm in self.policy.origins:
            return True
        try:
            parts = urlsplit(norm)
            port = parts.port or DEFAULT_PORTS.get(parts.scheme)
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        names = set(self.policy.origin_hosts)
        host = headers.get(b"host")
        if host is not None:
            host_name, host_port = split_host(host)
            names.add(host_name)
            here = host_port or DEFAULT_PORTS.get(scope.get("scheme", "http"))
        else:
            here = (scope.get("server") or (None, None))[1]
        return parts.hostname in names and port == here

    def _check_body(self, scope: Scope, headers: dict[bytes, str]) -> Rejection | None:
        if scope["method"] not in STATE_CHANGING:
            return None
        length = headers.get(b"content-length")
        has_body = b"transfer-encoding" in headers or (length is not None and length.strip() != "0")
        if has_body:
            ctype = headers.get(b"content-type", "").partition(";")[0].strip().lower()
            if ctype != "application/json" and not (ctype.startswith("application/") and ctype.endswith("+json")):
                return Rejection(415, UNSUPPORTED_MEDIA_TYPE,
                                 "The request body must be JSON sent with 'Content-Type: application/json'"
                                 f" (got {repr(ctype) if ctype else 'no Content-Type'}).",
                                 {"content_type": ctype})
        limit = self.policy.max_request_bytes
        if limit is not None and length is not None and length.strip().isdigit() and int(length) > limit:
            return Rejection(413, TOO_LARGE, too_large_message(limit), {"limit": limit})
        return None

    # ------------------------------------------------------------ the streamed size limit

    async def _call_limited(self, scope: Scope, receive: Receive, send: Send, rid: str, limit: int) -> None:
        received = 0
        started = False
        body_left = True  # the client may still be sending the body

        async def counting_receive() -> Message:
            nonlocal received, body_left
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_left = bool(message.get("more_body", False))
                if received > limit:
                    raise RequestTooLarge(limit)
            else:
                body_left = False
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except RequestTooLarge:
            if started:
                raise
            if body_left:
                await _drain(receive)
            await _reject(rid, Rejection(413, TOO_LARGE, too_large_message(limit), {"limit": limit}), send)


DRAIN_BYTES = 1 << 20  # the most of a refused body read (and thrown away) before the answer


async def _drain(receive: Receive, cap: int = DRAIN_BYTES) -> None:
    """Read and discard the rest of a refused request's body, up to ``cap`` bytes, before answering.

    The answer closes the connection; closing a socket with unread bytes in it makes the kernel send a
    reset, which can reach the client while it is still sending and destroy the answer before it is read
    (the client sees "connection reset" instead of the error envelope). A body beyond ``cap`` is not
    read: the connection is closed on it."""
    read = 0
    while read <= cap:
        message = await receive()
        if message["type"] != "http.request":
            return
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


async def _reject(rid: str, rejection: Rejection, send: Send) -> None:
    body = envelope(rid, rejection.code, rejection.message, rejection.meta)
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *rejection.headers,
    ]
    await send({"type": "http.response.start", "status": rejection.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
