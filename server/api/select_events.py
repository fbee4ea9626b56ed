"""``GET /topologies/{t}/select?q=<SELECT statement>``: a SELECT's tuples as Server-Sent Events.

The same query as ``POST /topologies/{t}/queries`` with a SELECT (parsed, checked and run by the
same functions; its errors answer the same 400 E0006 / E0007 envelopes), streamed as
``text/event-stream`` for a browser's ``EventSource`` or ``curl -N``: one ``data: <tuple JSON>``
event per tuple (the tuple written as in the multipart answer), and an ``event: end`` event when
the query ends. The cursor is closed when the client goes away.

Example::

    const events = new EventSource("/api/v1/topologies/t/select?q=" +
        encodeURIComponent("SELECT RSTREAM * FROM s [RANGE 1 TUPLES];"));
    events.onmessage = (e) => console.log(JSON.parse(e.data));
    events.addEventListener("end", () => events.close());
"""
from __future__ import annotations

import logging
from typing import Any

import anyio
from fastapi import APIRouter, Response
from starlette.types import Send

from sbpy.bql import ast
from sbpy.bql.errors import BQLError

from ..script_front import ScriptParseError, check_statement, parse_statements
from .errors import parse_error, statement_error
from .queries import MultipartStream
from .schemas import ERROR_RESPONSES, dumps
from .topologies import Manager, TopologyDep

log = logging.getLogger("sbpy.server.api.select_events")

router = APIRouter(prefix="/topologies/{topology_name}", tags=["queries"], responses=ERROR_RESPONSES)

_END = object()
SELECT_ONLY = "the q parameter must hold exactly one SELECT statement"


def event(data: bytes, name: str | None = None) -> bytes:
    """One SSE event (the JSON text has no newline, so it is one ``data:`` line)."""
    head = f"event: {name}\n".encode("ascii") if name else b""
    return head + b"data: " + data + b"\n\n"


class EventStream(MultipartStream):
    """``MultipartStream``'s life cycle (disconnect watch, cursor closed at the end) with SSE framing."""

    def __init__(self, cursor: Any):
        super().__init__(cursor)
        self.init_headers({"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache",
                           "x-accel-buffering": "no"})

    async def _stream(self, send: Send) -> None:
        iterator = iter(self.cursor)
        await send({"type": "http.response.body", "body": b": streaming\n\n", "more_body": True})
        while True:
            try:
                item = await anyio.to_thread.run_sync(next, iterator, _END, abandon_on_cancel=True)
            except Exception:  # noqa: BLE001 - the query failed; end the stream
                log.exception("SELECT failed while streaming events")
                break
            if item is _END:
                break
            try:
                chunk = self.part(item, False)
            except BQLError as err:
                log.warning("a tuple could not be written as JSON: %s", err)
                continue
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": event(b"{}", "end"), "more_body": False})

    def part(self, item: Any, first: bool) -> bytes:
        return event(dumps(item))


@router.get("/select")
def select_events(topology: TopologyDep, manager: Manager, q: str) -> Response:
    """Stream the tuples of the SELECT ``q`` as Server-Sent Events (see the module docstring)."""
    manager.wait_restored(topology.name)
    try:
        statements = parse_statements(q)
    except ScriptParseError as err:
        raise parse_error(err.error, q, err.rest) from None
    if len(statements) != 1 or not isinstance(statements[0].stmt, ast.Select | ast.SelectUnion):
        raise statement_error(SELECT_ONLY, statements[0].text if statements else q)
    parsed = statements[0]
    try:
        cursor = topology.select(check_statement(parsed))
    except BQLError as err:
        raise statement_error(err, parsed.text, q) from None
    except Exception as err:  # noqa: BLE001 - e.g. a Spark error: the statement failed
        log.exception("statement failed: %s", parsed.text)
        raise statement_error(f"{type(err).__name__}: {err}", parsed.text) from None
    return EventStream(cursor)
