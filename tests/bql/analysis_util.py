"""The analyzer's verdict on one statement, in the form the analyzer error tables write it."""
from __future__ import annotations

from sbpy.bql.analyzer import analyze, prepare
from sbpy.bql.errors import BQLAnalysisError
from sbpy.bql.parser import parse_one


def analysis_verdict(text: str) -> str:
    """``"ok"`` when the analyzer accepts the statement ``text`` (after ``prepare``), else
    ``"line:column: message"`` of the BQLAnalysisError it raises (any other error propagates)."""
    stmt = prepare(parse_one(text))
    try:
        analyze(stmt, text)
    except BQLAnalysisError as err:
        assert err.span is not None
        return f"{err.span.line}:{err.span.column}: {err.message}"
    return "ok"
