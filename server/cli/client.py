"""A thin HTTP client of the REST API v1, shared by ``sbpy shell`` and ``sbpy topology``.

Errors come back as ``RequestFailed`` carrying the envelope's code, message and meta; a SELECT's
``multipart/mixed`` answer is read part by part as it arrives.

Example::

    with ApiClient("http://127.0.0.1:15601/") as client:
        client.create_topology("t")
        client.queries("t", "EVAL 1 + 1;")      # QueryResult(kind="eval", value=2)
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from .options import DEFAULT_URI

TOKEN_ENV = "SBPY_AUTH_TOKEN"
_BOUNDARY = re.compile(r'boundary="?([^";]+)"?')


class RequestFailed(Exception):
    """An error answer (``code`` like ``E0007``) or a transport failure (``code`` ``""``)."""

    def __init__(self, code: str, message: str, meta: dict[str, Any] | None = None, status: int = 0):
        super().__init__(f"{code}: {message}" if code else message)
        self.code, self.message, self.meta, self.status = code, message, meta or {}, status


@dataclass
class QueryResult:
    """``kind`` is ``eval`` (``value``), ``select`` (``rows`` iterator; ``close()`` it) or ``statements``."""

    kind: str
    value: Any = None
    body: dict[str, Any] = field(default_factory=dict)
    rows: Iterator[Any] | None = None
    _response: httpx.Response | None = None

    def close(self) -> None:
        if self._response is not None:
            self._response.close()


def iter_multipart(chunks: Iterator[bytes], boundary: str) -> Iterator[Any]:
    """The JSON bodies of a ``multipart/mixed`` stream whose parts carry ``Content-Length``."""
    delimiter = b"--" + boundary.encode("ascii")
    buf = b""
    chunks = iter(chunks)

    def fill() -> bool:
        nonlocal buf
        try:
            buf += next(chunks)
        except StopIteration:
            return False
        return True

    while True:
        start = buf.find(delimiter)
        if start < 0 or len(buf) < start + len(delimiter) + 2:
            if not fill():
                return
            continue
        after = start + len(delimiter)
        if buf[after : after + 2] == b"--":
            return
        end = buf.find(b"\r\n\r\n", after)
        if end < 0:
            if not fill():
                return
            continue
        headers = buf[after:end].decode("latin-1").lower()
        match = re.search(r"content-length:\s*(\d+)", headers)
        if match is None:
            raise RequestFailed("", "a part of the SELECT answer has no Content-Length")
        length = int(match.group(1))
        body_start = end + 4
        while len(buf) < body_start + length:
            if not fill():
                return
        yield orjson.loads(buf[body_start : body_start + length])
        buf = buf[body_start + length :]


class ApiClient:
    """Calls ``<uri>/api/<version>/...``; ``token`` (or ``$SBPY_AUTH_TOKEN``) is sent as a bearer token."""

    def __init__(self, uri: str = DEFAULT_URI, api_version: str = "v1", token: str | None = None,
                 timeout: float = 30.0):
        self.base = uri.rstrip("/") + f"/api/{api_version}"
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(headers=headers, timeout=httpx.Timeout(timeout, read=None))

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # -- plumbing

    def _url(self, path: str) -> str:
        return self.base + path

    @staticmethod
    def _raise_for(response: httpx.Response) -> None:
        if response.status_code < 400:
            return
        try:
            err = response.json()["error"]
            raise RequestFailed(err["code"], err["message"], err.get("meta"), response.status_code)
        except (ValueError, KeyError, TypeError):
            raise RequestFailed(str(response.status_code), response.text.strip() or response.reason_phrase,
                                status=response.status_code) from None

    def request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        """One JSON request; ``RequestFailed`` on an error answer or when the server is unreachable."""
        try:
            response = self.http.request(method, self._url(path), json=body)
        except httpx.HTTPError as exc:
            raise RequestFailed("", f"cannot reach the server at {self.base}: {exc}") from None
        self._raise_for(response)
        return response.json()

    # -- topologies

    def create_topology(self, name: str) -> dict[str, Any]:
        return self.request("POST", "/topologies", {"name": name})

    def drop_topology(self, name: str) -> dict[str, Any]:
        return self.request("DELETE", f"/topologies/{name}")

    def list_topologies(self) -> list[str]:
        return [t["name"] for t in self.request("GET", "/topologies")["topologies"]]

    # -- statements

    def queries(self, topology: str, text: str) -> QueryResult:
        """Post statements; a SELECT's rows are read lazily from the open response."""
        request = self.http.build_request("POST", self._url(f"/topologies/{topology}/queries"),
                                          json={"queries": text})
        try:
            response = self.http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise RequestFailed("", f"cannot reach the server at {self.base}: {exc}") from None
        content_type = response.headers.get("content-type", "")
        if response.status_code < 400 and content_type.startswith("multipart/"):
            match = _BOUNDARY.search(content_type)
            if match is None:
                response.close()
                raise RequestFailed("", "the SELECT answer has no multipart boundary")
            rows = iter_multipart(response.iter_raw(), match.group(1))
            return QueryResult("select", rows=rows, _response=response)
        try:
            response.read()
        finally:
            response.close()
        self._raise_for(response)
        body = response.json()
        if "result" in body:
            return QueryResult("eval", value=body["result"], body=body)
        if "plan" in body:
            return QueryResult("explain", value=body["plan"], body=body)
        return QueryResult("statements", body=body)
