"""``/runtime_status``: facts about the server process (SensorBee's fields, Python/Spark for Go's).

Never starts Spark: the Spark version is the installed PySpark's. While the Spark supervisor
(``sbpy.server.supervisor``) reports the driver JVM dead (``restarting``, or ``failed`` to restart) it
answers 503 ``J0010`` with the supervisor's status as ``meta`` (state, error, restarts, JVM pid), so a
health check sees it; otherwise 200. It answers at once while topologies are restored in the
background.
"""
from __future__ import annotations

import getpass
import os
import platform
import socket

from fastapi import APIRouter, Request

import sbpy

from .errors import SPARK_UNAVAILABLE, ApiError
from .schemas import ErrorResponse, RuntimeStatus

router = APIRouter(tags=["status"])


def _spark_version() -> str | None:
    try:
        import pyspark
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    return pyspark.__version__


def _optional(fn) -> str | None:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - omitted when unavailable, as SensorBee does
        return None


def _check_spark(request: Request) -> None:
    supervisor = getattr(request.app.state, "supervisor", None)  # absent without a ServerContext
    if supervisor is not None and not supervisor.healthy:
        status = supervisor.status()
        raise ApiError(503, SPARK_UNAVAILABLE, status.get("error") or "Spark is unavailable", status)


@router.get("/runtime_status", response_model_exclude_none=True,
            responses={503: {"model": ErrorResponse, "description": "the Spark driver died; it is restarting"}})
def runtime_status(request: Request) -> RuntimeStatus:
    """CPU count, pid, host, user, working directory and versions (503 while Spark restarts)."""
    _check_spark(request)
    return RuntimeStatus(
        num_cpu=os.cpu_count() or 1,
        pid=os.getpid(),
        hostname=_optional(socket.gethostname),
        user=_optional(getpass.getuser),
        working_directory=_optional(os.getcwd),
        python_version=platform.python_version(),
        spark_version=_spark_version(),
        sbpy_version=sbpy.__version__,
    )
