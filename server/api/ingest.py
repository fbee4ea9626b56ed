"""``POST /topologies/{t}/sources/{s}/tuples``: feed an ``http`` source (``sbpy.plugins.builtin.http_source``).

The body is JSON Lines (one JSON object per line) sent with ``Content-Type: application/json``
(the request guard refuses other types). Answers:

- 200 ``{"accepted": n, "dropped": m, "errors": [...]}``: the ``n`` tuples are journaled; the ``m``
  lines that were not JSON objects are dropped (and reported on ``dropped_tuples``);
- 202 ``{"queued": n, "dropped": m, "errors": [...]}``: not journaled within the source's
  ``ack_timeout`` (a paused source); they are journaled once it runs;
- 404 E0001 when the topology or the source does not exist; 400 E0005 when the source is not of type
  ``http``; 409 E0007 when it has stopped; 503 J0002 when too many tuples are waiting.

Example::

    curl -H 'Content-Type: application/json' --data-binary @readings.jsonl \\
        http://localhost:15601/api/v1/topologies/t/sources/readings/tuples
"""
from __future__ import annotations

import anyio
from fastapi import APIRouter, Request, Response
from sbpy.plugins.builtin.http_source import HttpSource, IngestRefused

from ..nodes import status as st
from .errors import INTERNAL, STATEMENT, VALIDATION, ApiError, not_found
from .schemas import ERROR_RESPONSES, json_response
from .topologies import Manager, TopologyDep

router = APIRouter(prefix="/topologies/{topology_name}", tags=["ingest"], responses=ERROR_RESPONSES)

_BODY_DOC = {"requestBody": {"required": True, "content": {"application/json": {
    "schema": {"type": "string", "description": "JSON Lines: one JSON object per line"}}}}}


def http_source(topology: TopologyDep, source_name: str) -> HttpSource:
    """The ``http`` source ``source_name`` of ``topology``; the API errors above otherwise."""
    node = topology.sources.get(source_name.lower())
    if node is None:
        raise not_found("The source was not found")
    if not isinstance(node.impl, HttpSource):
        raise ApiError(400, VALIDATION, f"source '{node.name}' is of type '{node.type_name}', not 'http'",
                       {"source": [f"type '{node.type_name}' does not take tuples over HTTP"]})
    if node.state in (st.STOPPED, st.STOPPING):
        raise ApiError(409, STATEMENT, f"source '{node.name}' is stopped")
    return node.impl


@router.post("/sources/{source_name}/tuples", openapi_extra=_BODY_DOC)
async def post_tuples(request: Request, topology: TopologyDep, manager: Manager, source_name: str) -> Response:
    """Journal the posted tuples on an ``http`` source; see the module docstring for the answers."""
    await anyio.to_thread.run_sync(manager.wait_restored, topology.name)
    source = http_source(topology, source_name)
    body = await request.body()
    try:
        answer = await anyio.to_thread.run_sync(source.offer, body)
    except IngestRefused as err:
        if not source.accepting:
            raise ApiError(409, STATEMENT, f"source '{source_name.lower()}' is stopped") from None
        raise ApiError(503, INTERNAL, str(err)) from None
    if "accepted" in answer:
        return json_response(answer)
    node = topology.sources.get(source_name.lower())  # a paused source dropped meanwhile never runs
    if node is None or node.impl is not source or node.state in (st.STOPPED, st.STOPPING):
        raise ApiError(409, STATEMENT, f"source '{source_name.lower()}' is stopped")
    return json_response(answer, 202)


def connector_router() -> APIRouter:
    """This router and the SELECT event stream's (``select_events``), under ``/api/v1``."""
    from . import API_PREFIX, select_events

    outer = APIRouter(prefix=API_PREFIX)
    outer.include_router(router)
    outer.include_router(select_events.router)
    return outer
