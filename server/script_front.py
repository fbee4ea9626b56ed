"""The script front end shared by the REST API, startup and persistence: ``parse_statements`` (syntax,
with the unparsed rest of the script for SensorBee's E0006 body), ``check_statement`` (prepare +
analyze: E0007), ``check_query_mix`` (a SELECT, EVAL or EXPLAIN must be alone in its request) and
``describe`` (an error with its position and caret snippet).
"""
from __future__ import annotations

import logging
from dataclasses import replace

from sbpy.bql import ast
from sbpy.bql.errors import BQLError, BQLSyntaxError, format_error
from sbpy.bql.parsed import ParsedStatement

log = logging.getLogger("sbpy.server.manager")

QUERY_STATEMENTS = (ast.Select, ast.SelectUnion, ast.Eval, ast.Explain)
# SensorBee's text (an EXPLAIN is held to the same rule)
MIXED_QUERY_MESSAGE = "a SELECT or EVAL statement cannot be issued with other statements"


class ScriptParseError(Exception):
    """A syntax error in a script; ``rest`` is the script from the failing statement on."""

    def __init__(self, error: BQLSyntaxError, script: str, rest: str):
        super().__init__(error.message)
        self.error, self.script, self.rest = error, script, rest



def describe(err: BQLError, script: str) -> str:
    """The error with its position and caret snippet (syntax errors already carry theirs)."""
    if "\n" in err.message or err.span is None:
        return format_error(err)
    return format_error(err, script)


def _rest_from(script: str, error_offset: int) -> str:
    """The script from the start of the statement holding ``error_offset``: the longest prefix
    ending with ``;`` before the error that parses is made of complete statements."""
    from sbpy.bql.parser import parse_script

    end = error_offset
    for _ in range(64):
        cut = script.rfind(";", 0, end)
        if cut < 0:
            break
        try:
            parse_script(script[: cut + 1])
        except BQLError:
            end = cut
            continue
        return script[cut + 1 :].lstrip()
    return script.lstrip()


def parse_statements(script: str) -> list[ParsedStatement]:
    """Parse a script; a syntax error becomes ``ScriptParseError`` with the unparsed rest."""
    from sbpy.bql.parser import parse_script

    try:
        return list(parse_script(script))
    except BQLSyntaxError as err:
        offset = err.span.start if err.span is not None else len(script)
        raise ScriptParseError(err, script, _rest_from(script, offset)) from None


def check_statement(parsed: ParsedStatement) -> ParsedStatement:
    """Prepare and analyze one statement (raises ``BQLAnalysisError``); returns the prepared one."""
    from sbpy.bql.analyzer import analyze, prepare

    stmt = prepare(parsed.stmt)
    if stmt is None:
        stmt = parsed.stmt
    for warning in analyze(stmt, parsed.text) or ():
        log.warning("%s", warning)
    return parsed if stmt is parsed.stmt else replace(parsed, stmt=stmt)


def check_query_mix(statements: list[ParsedStatement]) -> ParsedStatement | None:
    """The offending SELECT/EVAL if one is issued with other statements, else None."""
    if len(statements) > 1:
        for parsed in statements:
            if isinstance(parsed.stmt, QUERY_STATEMENTS):
                return parsed
    return None
