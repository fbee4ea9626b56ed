"""Request/response models of the REST API (for validation of answers and the OpenAPI docs) and the
JSON encoder for BQL values.

Values follow the architecture's JSON contract (``sbpy.bql.jsonio``): ints stay ints, floats stay
floats (``2.0``), NaN/Inf become null, timestamps RFC3339 UTC, blobs base64.
"""
from __future__ import annotations

from typing import Any

from fastapi.responses import Response
from pydantic import BaseModel, Field

from sbpy.bql.jsonio import to_json_bytes


class TopologyCreate(BaseModel):
    """``POST /topologies`` body."""

    name: str = Field(examples=["t1"])


class QueriesRequest(BaseModel):
    """``POST /topologies/{t}/queries`` body: BQL statements separated by ``;``."""

    queries: str = Field(examples=["EVAL 1 + 1;"])


class TopologyInfo(BaseModel):
    name: str


class TopologyResponse(BaseModel):
    topology: TopologyInfo


class TopologyListResponse(BaseModel):
    topologies: list[TopologyInfo]


class QueriesResponse(BaseModel):
    """Answer to non-SELECT statements (EVAL answers ``{"result": value}`` instead)."""

    topology_name: str
    status: str = "running"
    queries: list[Any] = Field(default_factory=list)


class NodeSummary(BaseModel):
    node_type: str
    name: str
    state: str


class RuntimeStatus(BaseModel):
    num_cpu: int
    pid: int
    hostname: str | None = None
    user: str | None = None
    working_directory: str | None = None
    python_version: str
    spark_version: str | None
    sbpy_version: str


class ErrorBody(BaseModel):
    code: str
    message: str
    request_id: str
    meta: dict[str, Any] = Field(default_factory=dict)


class ErrorResponse(BaseModel):
    """Every error: ``{"error": {"code", "message", "request_id", "meta"}}``."""

    error: ErrorBody


def request_body_doc(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` documenting a JSON body that the handler parses itself."""
    schema = model.model_json_schema()
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorResponse, "description": "invalid request or statement"},
    404: {"model": ErrorResponse, "description": "not found"},
}

# ---------------------------------------------------------------- JSON encoding of values


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes of ``obj``, BQL values included (``sbpy.bql.jsonio``)."""
    return to_json_bytes(obj)


def json_response(obj: Any, status: int = 200) -> Response:
    """A JSON response whose values are encoded as BQL values (``2.0`` stays a float)."""
    return Response(dumps(obj), status_code=status, media_type="application/json")
