"""``POST /topologies/{t}/queries``: run BQL statements on a topology.

The text is parsed (syntax error → 400 E0006 with ``parse_errors`` and the unparsed rest), every
statement prepared and analyzed (→ 400 E0007), then:

- a SELECT, SELECT … UNION ALL or EVAL must be the only statement (else 400 E0007);
- EVAL answers ``{"result": value}``;
- SELECT streams ``multipart/mixed``, one ``application/json`` part per tuple, until the query
  ends or the client goes away (the cursor is then closed at once);
- other statements run in order; the first failure answers 400 E0007 and earlier ones stay applied.
"""
from __future__ import annotations

import logging
import secrets
from typing import Any

import anyio
from fastapi import APIRouter, Response
from starlette.types import Send

from sbpy.bql import ast
from sbpy.bql.errors import BQLError
from sbpy.bql.parsed import ParsedStatement

from ..script_front import (
    MIXED_QUERY_MESSAGE,
    ScriptParseError,
    check_query_mix,
    check_statement,
    parse_statements,
)
from ..topology import SelectCursor, Topology
from .errors import VALIDATION, ApiError, body_object, parse_error, statement_error
from .schemas import ERROR_RESPONSES, QueriesRequest, dumps, json_response, request_body_doc
from .streaming import ClientStream
from .topologies import JsonBody, Manager, TopologyDep

log = logging.getLogger("sbpy.server.api.queries")

router = APIRouter(prefix="/topologies/{topology_name}", tags=["queries"], responses=ERROR_RESPONSES)

_END = object()


class MultipartStream(ClientStream):
    """SensorBee's SELECT answer: ``multipart/mixed``, one JSON part per tuple of ``cursor``.

    Tuples are pulled from the cursor in a worker thread while ``ClientStream`` watches for the client's
    disconnect; either way the cursor is closed when the response ends.
    """

    def __init__(self, cursor: SelectCursor, boundary: str | None = None):
        self.cursor = cursor
        self.boundary = boundary or secrets.token_hex(30)
        self.status_code = 200
        self.background = None
        self.init_headers({"content-type": f'multipart/mixed; boundary="{self.boundary}"'})

    def part(self, item: Any, first: bool) -> bytes:
        """One part: delimiter, ``Content-Type`` and ``Content-Length`` headers, compact JSON body."""
        body = dumps(item)
        head = f"--{self.boundary}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        return (b"" if first else b"\r\n") + head.encode("ascii") + body

    async def _finish(self) -> None:
        await anyio.to_thread.run_sync(self._close)

    async def _stream(self, send: Send) -> None:
        iterator = iter(self.cursor)
        first = True
        while True:
            try:
                item = await anyio.to_thread.run_sync(next, iterator, _END, abandon_on_cancel=True)
            except Exception:  # noqa: BLE001 - the query failed; end the stream like SensorBee
                log.exception("SELECT failed while streaming")
                break
            if item is _END:
                break
            try:
                chunk = self.part(item, first)
            except BQLError as err:
                log.warning("a tuple could not be written as JSON: %s", err)
                continue
            first = False
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        closing = ("" if first else "\r\n") + f"--{self.boundary}--\r\n"
        await send({"type": "http.response.body", "body": closing.encode("ascii"), "more_body": False})

    def _close(self) -> None:
        try:
            self.cursor.close()
        except Exception:  # noqa: BLE001
            log.exception("closing a SELECT cursor failed")


def _queries_text(body: Any) -> str:
    form = body_object(body)
    if "queries" not in form:
        raise ApiError(400, VALIDATION, "'queries' field is missing", {"queries": ["field is missing"]})
    queries = form["queries"]
    if not isinstance(queries, str):
        raise ApiError(400, VALIDATION, "'queries' field must be a string",
                       {"queries": ["value must be a string"]})
    return queries


def _run(action: Any, parsed: ParsedStatement, script: str) -> Any:
    """Call ``action()``; any failure is 400 E0007 naming ``parsed``'s statement."""
    try:
        return action()
    except BQLError as err:
        raise statement_error(err, parsed.text, script) from None
    except Exception as err:  # noqa: BLE001 - e.g. a Spark error: the statement failed
        log.exception("statement failed: %s", parsed.text)
        raise statement_error(f"{type(err).__name__}: {err}", parsed.text) from None


@router.post("/queries", openapi_extra=request_body_doc(QueriesRequest))
def post_queries(topology: TopologyDep, manager: Manager, body: JsonBody) -> Response:
    """Run BQL statements; see the module docstring for the answers."""
    manager.wait_restored(topology.name)  # a topology restored in the background takes none before
    script = _queries_text(body)
    try:
        statements = parse_statements(script)
    except ScriptParseError as err:
        raise parse_error(err.error, script, err.rest) from None
    if not statements:
        return json_response({"topology_name": topology.name, "status": "running", "queries": []})
    mixed = check_query_mix(statements)
    if mixed is not None:
        raise statement_error(MIXED_QUERY_MESSAGE, mixed.text)
    checked = [_run(lambda p=p: check_statement(p), p, script) for p in statements]

    first = checked[0]
    if isinstance(first.stmt, ast.Eval):
        result = _run(lambda: topology.execute(first), first, script)
        return json_response({"result": result.get("result")})
    if isinstance(first.stmt, ast.Explain):
        result = _run(lambda: topology.execute(first), first, script)
        return json_response({"plan": result["plan"]})
    if isinstance(first.stmt, ast.Select | ast.SelectUnion):
        cursor = _run(lambda: topology.select(first), first, script)
        return MultipartStream(cursor)
    return _apply_all(manager, topology, checked, script)


def _apply_all(manager: Any, topology: Topology, checked: list[ParsedStatement], script: str) -> Response:
    done: list[dict[str, Any]] = []
    for parsed in checked:
        result = _run(lambda p=parsed: manager.apply(topology, p), parsed, script)
        done.append({"statement": parsed.text, **(result or {})})
    return json_response({"topology_name": topology.name, "status": "running", "queries": done})
