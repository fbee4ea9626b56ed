"""What ``sbpy shell`` prints: rows as JSON lines or a table, acknowledgements, errors, and the
status line shown while a statement waits for its first row.

- ``json`` format: one compact JSON document per row or EVAL value (``2`` and ``2.0`` stay distinct);
- ``table`` format: a header (the first row's keys, in the server's order) then one line per row.
  A table streams, so column widths come from the header and the rows seen so far: a wider value
  widens its column (up to ``MAX_WIDTH``, longer values end in ``…``) and the header is printed again
  above it; a row with other keys starts a new table. Strings print without quotes, other values as
  JSON. An EVAL value that is a map prints as a one-row table, any other value as JSON;
- ``error_lines(err)``: SensorBee's ``request failed: CODE: message`` with the parse errors (E0006),
  the statement error and its caret snippet (E0007) or the invalid fields (``name: already taken``);
- ``acknowledgement(statement)``: the statement's leading keywords and its node, e.g.
  ``CREATE SOURCE src`` for ``CREATE PAUSED SOURCE src TYPE file WITH ...``;
- ``StatusLine``: on a terminal, ``⠋ waiting for the first row · 3.4 s · Ctrl-C cancels`` redrawn in
  place by a thread until ``stop()`` erases it.
"""
from __future__ import annotations

import re
import threading
import time
from typing import Any, Self, TextIO

import orjson

from .client import RequestFailed
from .shell_lexer import grammar_keywords

MAX_WIDTH = 40
FORMATS = ("json", "table")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def to_json(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def cell(value: Any) -> str:
    """A table cell: strings as they are, anything else as JSON."""
    return value if isinstance(value, str) else to_json(value)


class TableWriter:
    """Streams rows (dicts) as an aligned text table to ``out`` (see the module doc)."""

    def __init__(self, out: TextIO):
        self.out = out
        self.columns: list[str] = []
        self.widths: list[int] = []

    def _fit(self, text: str, width: int) -> str:
        if len(text) > width:
            text = text[: width - 1] + "…"
        return text.ljust(width)

    def _line(self, cells: list[str]) -> str:
        return " | ".join(self._fit(c, w) for c, w in zip(cells, self.widths, strict=True)).rstrip()

    def _header(self) -> None:
        self.out.write(self._line(self.columns) + "\n")
        self.out.write("-+-".join("-" * w for w in self.widths) + "\n")

    def row(self, row: Any) -> None:
        if not isinstance(row, dict):
            self.reset()
            self.out.write(to_json(row) + "\n")
            return
        cells = [cell(v) for v in row.values()]
        columns = [str(k) for k in row]
        if columns != self.columns:
            self.columns = columns
            self.widths = [min(max(len(c), len(v)), MAX_WIDTH) for c, v in zip(columns, cells, strict=True)]
            self._header()
        else:
            wider = [min(max(w, len(v)), MAX_WIDTH) for w, v in zip(self.widths, cells, strict=True)]
            if wider != self.widths:
                self.widths = wider
                self._header()
        self.out.write(self._line(cells) + "\n")

    def reset(self) -> None:
        """Forget the columns: the next row starts a new table."""
        self.columns, self.widths = [], []


class Renderer:
    """Prints results in ``fmt`` (``json`` or ``table``) to ``out`` and messages to ``err``."""

    def __init__(self, out: TextIO, err: TextIO, fmt: str = "json"):
        if fmt not in FORMATS:
            raise ValueError(f"unknown output format '{fmt}' (json or table)")
        self.out, self.err, self.format = out, err, fmt
        self.table = TableWriter(out)

    def row(self, row: Any) -> None:
        """One SELECT row."""
        if self.format == "table":
            self.table.row(row)
        else:
            self.out.write(to_json(row) + "\n")
        self.out.flush()

    def end_rows(self) -> None:
        self.table.reset()

    def value(self, value: Any) -> None:
        """An EVAL result."""
        if self.format == "table" and isinstance(value, dict):
            self.table.row(value)
            self.table.reset()
        else:
            self.out.write(to_json(value) + "\n")
        self.out.flush()

    def text(self, text: str, to_err: bool = False) -> None:
        stream = self.err if to_err else self.out
        stream.write(text.rstrip("\n") + "\n")
        stream.flush()


def error_lines(err: RequestFailed) -> list[str]:
    """SensorBee's rendering of a failed request (see the module doc); never a Python repr."""
    if not err.code:
        return [f"request failed: {err.message}"]
    meta = err.meta
    lines = [f"request failed: {err.code}: {err.message}"]
    if err.code == "E0006":
        lines += [str(line) for line in meta.get("parse_errors", [])]
    elif err.code == "E0007" and "error" in meta:
        lines[0] += f": {meta['error']}"
        lines += [str(line) for line in meta.get("snippet", [])]
    else:
        lines += _meta_lines(meta)
    return lines


def _meta_lines(meta: Any) -> list[str]:
    """``field: message`` for each message of a validation error's meta (``{"name": ["taken"]}``)."""
    if not isinstance(meta, dict):
        return [] if meta in (None, "", [], {}) else [cell(meta)]
    lines = []
    for key, messages in meta.items():
        items = messages if isinstance(messages, list) else [messages]
        lines += [f"{key}: {cell(m)}" for m in items]
    return lines


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUIET_WORDS = frozenset({"paused"})  # CREATE PAUSED SOURCE s: acknowledged as CREATE SOURCE s


def acknowledgement(statement: str) -> str:
    """The leading keywords of ``statement`` (upper-cased) and the first name after them."""
    words: list[str] = []
    for match in _WORD.finditer(_strip_comments(statement)):
        word = match.group()
        if word.lower() in grammar_keywords():
            if word.lower() not in _QUIET_WORDS:
                words.append(word.upper())
            continue
        words.append(word)
        break
    return " ".join(words) or statement.strip()


def _strip_comments(text: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


class StatusLine:
    """``message`` with a spinner and the elapsed seconds, redrawn on ``stream`` every ``interval``
    until ``stop()`` erases it; does nothing unless ``enabled`` (a terminal)."""

    def __init__(self, stream: TextIO, message: str, enabled: bool, interval: float = 0.1):
        self.stream, self.message, self.enabled, self.interval = stream, message, enabled, interval
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._drawn = False

    def start(self) -> Self:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, name="sbpy-shell-status", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        frame = 0
        while not self._stop.wait(self.interval if self._drawn else 0.3):
            with self._lock:
                if self._stop.is_set():
                    return
                elapsed = time.monotonic() - started
                self.stream.write(f"\r\x1b[K{SPINNER[frame % len(SPINNER)]} {self.message} · {elapsed:.1f} s"
                                  " · Ctrl-C cancels")
                self.stream.flush()
                self._drawn = True
            frame += 1

    def stop(self) -> None:
        """Stop redrawing and erase the line (idempotent)."""
        with self._lock:
            if self._stop.is_set():
                return
            self._stop.set()
            if self._drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
