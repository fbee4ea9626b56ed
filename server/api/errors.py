"""The REST error envelope and the exception handlers that render every failure with it.

Every error answers ``{"error": {"code", "message", "request_id", "meta"}}`` with SensorBee's codes
(see docs: sensorbee-server.md section 2). Handlers raise ``ApiError``; FastAPI's own failures
(unknown URL, wrong method, request validation, crashes) are mapped here too.
"""
from __future__ import annotations

import logging
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from sbpy.bql.errors import BQLError, format_error

from ..script_front import describe
from .schemas import dumps

log = logging.getLogger("sbpy.server.api")

URL_NOT_FOUND = "J0001"
INTERNAL = "J0002"
METHOD_NOT_ALLOWED = "J0003"  # sbpy's: SensorBee answers unknown methods with its 404
BAD_JSON = "J0004"
UNAUTHORIZED = "J0005"  # sbpy's: SensorBee has no authentication
# sbpy's request guards (sbpy.server.auth); SensorBee has none of them
ORIGIN_NOT_ALLOWED = "J0006"  # 403: a state-changing request from a foreign web page
UNSUPPORTED_MEDIA_TYPE = "J0007"  # 415: a state-changing request whose body is not declared JSON
HOST_NOT_ALLOWED = "J0008"  # 400: a Host name the server does not answer to (DNS rebinding)
TOO_LARGE = "J0009"  # 413: a body over network.max_request_bytes
SPARK_UNAVAILABLE = "J0010"  # 503: the Spark driver died and is restarting (sbpy.server.supervisor)
NOT_FOUND = "E0001"
VALIDATION = "E0005"
PARSE = "E0006"
STATEMENT = "E0007"


class ApiError(Exception):
    """An error answered with the envelope: HTTP ``status``, SensorBee ``code``, ``message``, ``meta``."""

    def __init__(self, status: int, code: str, message: str, meta: dict[str, Any] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.meta = meta or {}


class RequestTooLarge(StarletteHTTPException):
    """Raised while a request body streams in once it passes ``limit`` bytes; rendered as 413 J0009
    (an HTTP exception, so FastAPI's body reading passes it on instead of calling it a bad body)."""

    def __init__(self, limit: int):
        super().__init__(413, too_large_message(limit))
        self.limit = limit


def too_large_message(limit: int) -> str:
    return (f"The request body is larger than {limit} bytes (network.max_request_bytes).")


def not_found(message: str) -> ApiError:
    """404 E0001, e.g. ``not_found("The topology doesn't exist")``."""
    return ApiError(404, NOT_FOUND, message)


def invalid_body(message: str = "The request body is invalid.", **fields: list[str]) -> ApiError:
    """400 E0005 with per-field messages, e.g. ``invalid_body(name=["already taken"])``."""
    return ApiError(400, VALIDATION, message, dict(fields))


def statement_error(err: BQLError | str, statement: str, script: str | None = None) -> ApiError:
    """400 E0007 "Cannot process a statement"; meta has ``error``, ``statement`` and, when the span
    is known, ``line``/``column`` (in the posted text) and a caret ``snippet``."""
    meta: dict[str, Any] = {"error": err if isinstance(err, str) else err.message, "statement": statement}
    if isinstance(err, BQLError) and err.span is not None:
        meta["line"], meta["column"] = err.span.line, err.span.column
        text = script if script is not None else statement
        meta["snippet"] = format_error(err, text).split("\n")[1:]
    return ApiError(400, STATEMENT, "Cannot process a statement", meta)


def parse_error(err: BQLError, script: str, rest: str) -> ApiError:
    """400 E0006: ``parse_errors`` are the rendered error's lines, ``statement`` the unparsed rest."""
    meta = {"parse_errors": describe(err, script).split("\n"), "statement": rest}
    return ApiError(400, PARSE, "Cannot parse a BQL statement", meta)


def request_id(request: Request) -> str:
    """The id the request middleware gave this request, as a string."""
    return str(request.scope.get("state", {}).get("request_id", "0"))


def envelope(request_id_: str, code: str, message: str, meta: dict[str, Any] | None = None) -> bytes:
    """The JSON body of an error."""
    return dumps({"error": {"code": code, "message": message, "request_id": request_id_, "meta": meta or {}}})


def error_response(request: Request, status: int, code: str, message: str,
                   meta: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Response:
    body = envelope(request_id(request), code, message, meta)
    return Response(body, status_code=status, media_type="application/json", headers=headers)


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return error_response(request, exc.status, exc.code, exc.message, exc.meta)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 404:
        return error_response(request, 404, URL_NOT_FOUND, "The request URL was not found.")
    if isinstance(exc, RequestTooLarge):
        return error_response(request, 413, TOO_LARGE, exc.detail, {"limit": exc.limit})
    if exc.status_code == 405:
        return error_response(request, 405, METHOD_NOT_ALLOWED, "The request method is not allowed.",
                              headers=dict(exc.headers or {}))
    return error_response(request, exc.status_code, INTERNAL if exc.status_code >= 500 else VALIDATION,
                          str(exc.detail))


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    meta: dict[str, list[str]] = {}
    for err in exc.errors():
        if err.get("type") == "json_invalid":
            return error_response(request, 400, BAD_JSON, "Cannot parse the request body as JSON.")
        field = str(err["loc"][-1]) if err.get("loc") else "body"
        meta.setdefault(field, []).append(err.get("msg", "invalid"))
    return error_response(request, 400, VALIDATION, "The request body is invalid.", meta)


async def _crash(request: Request, exc: Exception) -> Response:
    log.error("request %s failed: %r", request_id(request), exc, exc_info=exc)
    return error_response(request, 500, INTERNAL, "Something went wrong. Please try again later.")


def install_error_handlers(app: FastAPI) -> None:
    """Register the envelope renderers on ``app``."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _crash)


async def json_body(request: Request) -> Any:
    """Dependency: the request body parsed as JSON; J0004 when it is not JSON. (The request guard of
    ``sbpy.server.auth`` has already refused bodies not declared ``application/json`` with 415, so
    ``curl -d`` needs ``-H 'Content-Type: application/json'``, unlike with SensorBee.)"""
    raw = await request.body()
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ApiError(400, BAD_JSON, "Cannot parse the request body as JSON.") from None


def body_object(body: Any) -> dict[str, Any]:
    """The body as a JSON object; 400 E0005 "The request body is invalid." otherwise."""
    if not isinstance(body, dict):
        raise invalid_body()
    return body
