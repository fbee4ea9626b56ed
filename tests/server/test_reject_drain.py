"""A refused request's body is read to its end before the refusal is sent (``auth._drain``): closing a
connection with unread bytes resets it, which can destroy the answer before the client reads it.

The middleware is driven directly over ASGI: ``receive`` hands out the body in chunks and records how
many the middleware took before the first ``send``."""
from __future__ import annotations

import asyncio
import json

from sbpy.server.auth import DRAIN_BYTES, RequestContextMiddleware, RequestPolicy


def _run(policy: RequestPolicy, chunks: list[bytes], headers: list[tuple[bytes, bytes]], app=None):
    taken: list[bytes] = []
    at_first_send: list[int] = []
    sent: list[dict] = []

    async def receive():
        if len(taken) < len(chunks):
            taken.append(chunks[len(taken)])
            return {"type": "http.request", "body": taken[-1], "more_body": len(taken) < len(chunks)}
        raise AssertionError("receive() called after the body ended (it would wait for the disconnect)")

    async def send(message):
        if not at_first_send:
            at_first_send.append(len(taken))
        sent.append(message)

    async def reading_app(scope, receive, send):  # reads the whole body, like a JSON endpoint
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    scope = {"type": "http", "method": "POST", "path": "/api/v1/topologies/t/queries",
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"), *headers]}
    asyncio.run(RequestContextMiddleware(app or reading_app, policy)(scope, receive, send))
    status = sent[0]["status"]
    body = json.loads(sent[1]["body"]) if status != 200 else None
    return status, body, at_first_send[0], len(taken)


def test_a_streamed_body_over_the_limit_is_read_to_its_end_before_the_413():
    chunks = [b" " * 100 for _ in range(30)]  # 3000 bytes, no Content-Length
    status, body, before_answer, taken = _run(RequestPolicy(max_request_bytes=1000), chunks,
                                              [(b"transfer-encoding", b"chunked")])
    assert status == 413 and body["error"]["code"] == "J0009"
    assert before_answer == taken == len(chunks)


def test_a_declared_length_over_the_limit_is_read_before_the_413():
    chunks = [b" " * 500 for _ in range(4)]
    status, body, before_answer, taken = _run(RequestPolicy(max_request_bytes=1000), chunks,
                                              [(b"content-length", b"2000")])
    assert status == 413 and body["error"]["code"] == "J0009"
    assert before_answer == taken == len(chunks)


def test_other_refusals_read_the_body_too():
    chunks = [b"x" * 10 for _ in range(5)]
    status, body, before_answer, taken = _run(RequestPolicy(auth_token="secret"), chunks,
                                              [(b"content-length", b"50")])
    assert status == 401 and body["error"]["code"] == "J0005"
    assert before_answer == taken == len(chunks)


def test_the_drain_stops_after_its_cap():
    size = 64 * 1024
    chunks = [b" " * size for _ in range(DRAIN_BYTES // size + 10)]
    status, _, before_answer, _ = _run(RequestPolicy(max_request_bytes=1000), chunks,
                                       [(b"transfer-encoding", b"chunked")])
    assert status == 413
    assert before_answer < len(chunks)  # a huge body is not read to its end
    assert (before_answer - 1) * size <= DRAIN_BYTES + 1000 + size


def test_a_body_that_ended_as_it_crossed_the_limit_is_not_waited_for():
    # the last chunk crosses the limit: nothing is left, receive() must not be called again
    chunks = [b" " * 600, b" " * 600]
    status, _, before_answer, taken = _run(RequestPolicy(max_request_bytes=1000), chunks,
                                           [(b"transfer-encoding", b"chunked")])
    assert status == 413 and before_answer == taken == 2
