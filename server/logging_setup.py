"""The server's log: one handler, one format, for Python's records and the Spark JVM's lines.

``configure_logging(config, fmt)`` sends every record at ``logging.min_log_level`` and above to the
configured target (stderr, stdout or a file) in one of two formats:

- ``text`` (default): ``2026-11-24 21:00:01,123 WARNING org.apache.spark.util.Utils: message``,
  an exception's traceback on the lines after it;
- ``json``: one JSON object per line, ``{"time": "2026-11-24T21:00:01.123Z", "level": "WARNING",
  "logger": "...", "message": "...", "exception": "..."}`` (``exception`` only when there is one;
  ``time`` in UTC).

uvicorn's loggers propagate to that handler, py4j's is kept at WARNING or above, and the output of
the Spark driver JVM (log4j lines, the JVM's own warnings, Python workers' stderr) is routed into
the same logging by ``sbpy.server.logging_jvm`` (``route_jvm=True``). ``$SBPY_LOG_FORMAT`` gives the
format when the command line does not.
"""
from __future__ import annotations

import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

from .config import Config

FORMATS = ("text", "json")
FORMAT_ENV = "SBPY_LOG_FORMAT"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record (see the module doc)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(entry).decode("utf-8")


def log_format(requested: str | None) -> str:
    """``requested``, else ``$SBPY_LOG_FORMAT``, else ``text``; ``ValueError`` for an unknown one."""
    fmt = (requested or os.environ.get(FORMAT_ENV) or "text").lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format '{fmt}' (text or json)")
    return fmt


def formatter(fmt: str) -> logging.Formatter:
    return JsonLinesFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT)


class HideStartupTraceback(logging.Filter):
    """uvicorn logs the lifespan's traceback; a ``StartupError`` is already logged in plain words."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "sbpy.server.manager.StartupError" not in str(record.msg)


class ConsoleHandler(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` (or ``sys.stdout``) is when a record comes, as
    ``logging.lastResort`` does: a handler that outlives a replaced stream (a test's captured output,
    a closed redirect) never writes into a closed file — which would raise inside a py4j callback or
    a watcher thread and lose what it was reporting."""

    def __init__(self, name: str = "stderr"):
        self._name = name
        super().__init__()

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stdout if self._name == "stdout" else sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:  # the stream is always the current one
        pass


def handler_for(config: Config) -> logging.Handler:
    """A handler writing to ``logging.target`` (stderr, stdout or a file, made if missing)."""
    target = config.logging.target
    if target in ("stderr", "stdout"):
        return ConsoleHandler(target)
    path = config.resolve(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    return logging.FileHandler(path, encoding="utf-8")


def configure_logging(config: Config, fmt: str = "text", route_jvm: bool = True) -> None:
    """Send records at ``min_log_level`` and above to the configured target in format ``fmt``."""
    handler = handler_for(config)
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(config.logging.level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.error").addFilter(HideStartupTraceback())
    logging.getLogger("py4j").setLevel(max(config.logging.level, logging.WARNING))
    if route_jvm:
        from . import logging_jvm

        logging_jvm.install()
