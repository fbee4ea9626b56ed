"""Every error the BQL layer raises, with a stable REST code and, where known, a source span.

Message style (SensorBee's): lower-case fact, quoted names, no final period. ``format_error``
renders the caret snippet used by the REST API, the shell and ``sbpy check``.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open character range ``[start, end)`` in a statement text, with 1-based line/column of start."""

    start: int
    end: int
    line: int
    column: int


class BQLError(Exception):
    """Base class. ``code`` is the SensorBee REST error code the server answers with."""

    code = "E0007"

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class BQLSyntaxError(BQLError):
    """The text is not valid BQL (REST E0006)."""

    code = "E0006"


class BQLAnalysisError(BQLError):
    """A statement parses but breaks a statement-local rule (REST E0007)."""


class BQLEvaluationError(BQLError):
    """An expression failed on a value (a bad cast, division by zero, a missing key ...)."""


class BQLExecutionError(BQLError):
    """A statement could not be carried out on a topology (unknown node, duplicate name ...)."""


class UnsupportedFeatureError(BQLError):
    """The statement is valid BQL but this build cannot execute it yet."""


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def caret_snippet(text: str, span: Span) -> str:
    """The line of ``text`` holding ``span`` with a caret under its first character."""
    lines = text.splitlines() or [""]
    idx = min(max(span.line - 1, 0), len(lines) - 1)
    src = lines[idx]
    return f"{src}\n{' ' * max(span.column - 1, 0)}^"


def format_error(err: BQLError, text: str | None = None) -> str:
    """Message, then ``line N, column M`` and the caret snippet when the span and text are known."""
    out = err.message
    if err.span is not None:
        out += f" (line {err.span.line}, column {err.span.column})"
        if text is not None:
            out += "\n" + caret_snippet(text, err.span)
    if err.hint:
        out += "\n" + err.hint
    return out
