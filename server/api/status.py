"""``/runtime_status``: facts about the server process (SensorBee's fields, Python/Spark for Go's).

Never starts Spark: the Spark version is the installed PySpark's.
"""
from __future__ import annotations

import getpass
import os
import platform
import socket

from fastapi import APIRouter

import sbpy

from .schemas import RuntimeStatus

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


@router.get("/runtime_status", response_model_exclude_none=True)
def runtime_status() -> RuntimeStatus:
    """CPU count, pid, host, user, working directory and versions."""
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
