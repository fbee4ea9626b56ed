"""``sbpy check [FILE | -]``: parse and analyze a BQL script without a server.

Prints one ``FILE:LINE:COL: message`` per error and ``FILE:LINE:COL: warning: message`` per warning
(LINE/COL are positions in the whole file; stdin prints as ``<stdin>``) and exits 1 if any error was
found, else 0. After a syntax error checking resumes at the next ``;``. Besides the statement-local
rules it checks the parameters of built-in source/sink types and folds constant EVAL expressions;
a SELECT is never rejected for a value error (``WHERE 6``, ``1/0``), which fails per tuple at run time.

Example::

    $ echo 'SELECT RSTREAM a FROM src;' | sbpy check -
    <stdin>:1:23: stream 'src' needs a window such as [RANGE 1 TUPLES] (or an EMIT clause for a global aggregation)
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import TextIO

from sbpy.bql.analyzer import analyze, check_builtin_params, prepare
from sbpy.bql.ast import Eval
from sbpy.bql.errors import BQLError, BQLSyntaxError, Span, line_col
from sbpy.bql.parsed import ParsedStatement


@dataclass(frozen=True)
class Finding:
    """One reported problem: 1-based position in the file, message, and whether it is only a warning."""

    line: int
    column: int
    message: str
    warning: bool = False

    def render(self, filename: str) -> str:
        kind = "warning: " if self.warning else ""
        return f"{filename}:{self.line}:{self.column}: {kind}{self.message}"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand."""
    p = subparsers.add_parser(
        "check", help="check a BQL file for syntax and statement errors (no server needed)",
        description="Parse and analyze a BQL script; print FILE:LINE:COL: message per problem.")
    p.add_argument("file", nargs="?", default="-", help="BQL file, or - for stdin (default)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run ``check`` on ``args.file``; 0 if clean, 1 if any error (2 if the file cannot be read)."""
    out = stdout or sys.stdout
    path = getattr(args, "file", "-") or "-"
    if path == "-":
        name, text = "<stdin>", (stdin or sys.stdin).read()
    else:
        name = path
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            print(f"{path}: cannot read the file: {exc.strerror or exc}", file=sys.stderr)
            return 2
    findings = check_text(text)
    for f in findings:
        print(f.render(name), file=out)
    return 1 if any(not f.warning for f in findings) else 0


def check_text(text: str) -> list[Finding]:
    """Every finding of a whole script, in file order."""
    from sbpy.bql.parser import parse_script

    findings: list[Finding] = []
    masked = text  # already-checked text is blanked out (newlines kept) so positions stay file positions
    while True:
        try:
            statements = parse_script(masked)
        except BQLSyntaxError as err:
            offset = _syntax_offset(err, masked)
            findings.append(_finding_at(text, offset, syntax_message(err)))
            seps = _separators(masked)
            before = [s for s in seps if s < offset]
            if before:
                try:
                    statements = parse_script(masked[: before[-1] + 1])
                except BQLSyntaxError:
                    statements = []
                for ps in statements:
                    findings.extend(check_statement(ps, text))
            after = [s for s in seps if s >= offset]
            if not after or not masked[after[0] + 1:].strip():
                break
            cut = after[0] + 1
            masked = "".join(c if c == "\n" else " " for c in masked[:cut]) + masked[cut:]
            continue
        for ps in statements:
            findings.extend(check_statement(ps, text))
        break
    findings.sort(key=lambda f: (f.line, f.column))
    return findings


def syntax_message(err: BQLSyntaxError) -> str:
    """One line for a syntax error: its reason, without the caret snippet SensorBee's text carries."""
    lines = [x for x in err.message.splitlines() if x.strip()]
    if len(lines) >= 4 and lines[0].startswith("statement has a syntax error"):
        return f"syntax error: {lines[3]}"
    return lines[0] if lines else "syntax error"


def check_statement(ps: ParsedStatement, text: str) -> list[Finding]:
    """Findings of one parsed statement (analysis error or warnings, parameter and EVAL errors)."""
    try:
        stmt = prepare(ps.stmt)
        warnings = analyze(stmt, ps.text)
        check_builtin_params(stmt)
        if isinstance(stmt, Eval):
            _fold_eval(stmt)
    except BQLError as err:
        return [_finding(err.span, ps, text, err.message)]
    return [_finding(w.span, ps, text, w.message, warning=True) for w in warnings]


def _fold_eval(stmt: Eval) -> None:
    from sbpy.bql.eval import evaluate_constant

    evaluate_constant(stmt.expr, on=stmt.on)


def _finding(span: Span | None, ps: ParsedStatement, text: str, message: str, warning: bool = False) -> Finding:
    return _finding_at(text, _absolute(span, ps), message, warning)


def _finding_at(text: str, offset: int, message: str, warning: bool = False) -> Finding:
    line, col = line_col(text, max(0, min(offset, len(text))))
    first = message.splitlines()[0] if message else "error"
    return Finding(line, col, first, warning)


def _absolute(span: Span | None, ps: ParsedStatement) -> int:
    """File offset of ``span`` (spans of ``parse_script`` are relative to the whole script)."""
    stmt_span = ps.stmt.span
    base = ps.offset
    if span is None:
        span = stmt_span
        if span is None:
            return base + len(ps.text) - len(ps.text.lstrip())
    if stmt_span is not None and stmt_span.start >= base:
        return span.start  # script-relative spans
    return base + span.start


def _syntax_offset(err: BQLSyntaxError, text: str) -> int:
    span = err.span
    if span is None:
        return 0
    if span.start or span.line == 1:
        return span.start
    # only line/column known
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[: span.line - 1]) + span.column - 1


def _separators(text: str) -> list[int]:
    """Offsets of statement-ending ';' (outside strings, quoted identifiers and comments)."""
    out: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'`":
            j = i + 1
            while j < n:
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:  # doubled quote escapes
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
            continue
        if text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c == ";":
            out.append(i)
        i += 1
    return out
