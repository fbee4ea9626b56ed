"""``sbpy check [FILE | -]``: parse, analyze and resolve the names of a BQL script without a server.

Prints ``FILE:LINE:COL: message`` per error and ``FILE:LINE:COL: warning: message`` per warning
(LINE/COL are positions in the whole file; stdin prints as ``<stdin>``), each followed by the line
with a caret, and exits 1 if any error was found, else 0. After a syntax error checking resumes at
the next ``;``. Besides the statement-local rules it checks the parameters of built-in source/sink
types and folds constant EVAL expressions; a SELECT is never rejected for a value error (``WHERE 6``,
``1/0``), which fails per tuple at run time.

Names are resolved across the file in statement order (``sbpy.bql.analyzer.resolve``): functions,
UDSFs, source/sink/state types (built-ins, installed plugins and the ``plugins`` of ``--config`` or
``$SENSORBEE_CONFIG``), and the streams, sources, sinks and states the file creates before using them;
with ``--topology`` also the nodes of that topology on the server at ``--uri`` (``$SBPY_URI``). A FILE
is resolved by default; stdin, often one statement meant for an existing topology, only with
``--resolve``, ``--config`` or ``--topology``. Nothing imports Spark: a check takes a fraction of a
second.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, TextIO

from sbpy.bql.analyzer import analyze, check_builtin_params, prepare
from sbpy.bql.analyzer.resolve import ScriptScope
from sbpy.bql.ast import Eval, FunctionCall
from sbpy.bql.errors import BQLError, BQLSyntaxError, Span, caret_snippet, line_col
from sbpy.bql.parsed import ParsedStatement

from .options import add_client_options, default_uri

CONFIG_ENV = "SENSORBEE_CONFIG"  # as ``sbpy run`` (sbpy.server.config.ENV_VAR, not imported: pydantic is slow)
_DECLARATION = re.compile(
    r"\s*(?:CREATE\s+(?:PAUSED\s+)?(SOURCE|STREAM|SINK|STATE)|LOAD\s+(STATE))\s+([A-Za-z_][A-Za-z0-9_]*)",
    re.IGNORECASE)


@dataclass(frozen=True)
class Finding:
    """One reported problem: 1-based position in the file, message, whether it is only a warning,
    and how many characters the caret line underlines."""

    line: int
    column: int
    message: str
    warning: bool = False
    length: int = 1

    def render(self, filename: str, text: str | None = None) -> str:
        """``FILE:LINE:COL: [warning: ]message``, then the line and a caret when ``text`` is given."""
        kind = "warning: " if self.warning else ""
        head = f"{filename}:{self.line}:{self.column}: {kind}{self.message}"
        if text is None:
            return head
        snippet = caret_snippet(text, Span(0, 0, self.line, self.column)) + "~" * (self.length - 1)
        return head + "".join(f"\n    {x}" for x in snippet.split("\n"))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``check`` subcommand."""
    p = subparsers.add_parser(
        "check", help="check a BQL file: syntax, statements and names (no server needed)",
        description="Parse and analyze a BQL script and resolve its names. Each problem prints as\n"
                    "FILE:LINE:COL: message and the line with a caret; exit 1 if any error was found.")
    p.add_argument("file", nargs="?", default="-", help="BQL file, or - for stdin (default)")
    p.add_argument("--resolve", action=argparse.BooleanOptionalAction, default=None,
                   help="resolve function, type and node names (default: for a FILE, not for stdin)")
    p.add_argument("-c", "--config", default=None,
                   help="load the 'plugins' of this sensorbee.yaml (default: $SENSORBEE_CONFIG)")
    p.add_argument("-t", "--topology", default=None,
                   help="also resolve against the nodes of this topology on the server at --uri")
    add_client_options(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run ``check`` on ``args.file``; 0 if clean, 1 if any error, 2 if the file, the config, a
    plugin or the server cannot be read."""
    out = stdout or sys.stdout
    opts = vars(args)
    path = opts.get("file") or "-"
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
    resolve = opts.get("resolve")
    if resolve is None:
        resolve = path != "-" or bool(opts.get("config") or opts.get("topology"))
    try:
        scope, registry = (_resolution(opts) if resolve else (None, None))
    except CheckSetupError as err:
        print(f"sbpy check: {err}", file=sys.stderr)
        return 2
    findings = check_text(text, scope, registry)
    for f in findings:
        print(f.render(name, text), file=out)
    return 1 if any(not f.warning for f in findings) else 0


class CheckSetupError(Exception):
    """The config, a plugin or the server needed for name resolution cannot be loaded or reached."""


def _resolution(opts: dict[str, Any]) -> tuple[ScriptScope, Any]:
    """The scope names resolve in and the function registry, from the config and the server."""
    from sbpy.plugins.loader import PluginLoadError

    from .catalog import catalog_of, function_registry, load_registries

    config = None
    config_path = opts.get("config") or os.environ.get(CONFIG_ENV)
    if config_path:
        from ..config import ConfigError, load_config

        try:
            config = load_config(config_path)
        except ConfigError as err:
            raise CheckSetupError(str(err)) from None
    try:
        registries = load_registries(config)
    except PluginLoadError as err:
        raise CheckSetupError(str(err)) from None
    functions = function_registry(registries)
    catalog = catalog_of(registries, functions)
    topology = opts.get("topology")
    if not topology:
        return ScriptScope(catalog), functions
    from .catalog import topology_nodes
    from .client import ApiClient, RequestFailed

    try:
        with ApiClient(opts.get("uri") or default_uri(), opts.get("api_version") or "v1") as client:
            existing = topology_nodes(client, topology)
    except RequestFailed as err:
        detail = f"{err.code}: {err.message}" if err.code else err.message
        raise CheckSetupError(f"cannot read topology '{topology}': {detail}") from None
    return ScriptScope(catalog, existing), functions


def check_text(text: str, scope: ScriptScope | None = None, registry: Any = None) -> list[Finding]:
    """Every finding of a whole script, in file order. With ``scope`` names are resolved in it (and
    it is left as the script leaves it); ``registry`` is the function registry for arities."""
    from sbpy.bql.parser import parse_script

    findings: list[Finding] = []

    def check_all(statements: list[ParsedStatement]) -> None:
        for ps in statements:
            findings.extend(check_statement(ps, text, registry))
            if scope is not None:
                findings.extend(resolve_statement(scope, ps, text))

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
                check_all(statements)
            after = [s for s in seps if s >= offset]
            if scope is not None:
                start = before[-1] + 1 if before else 0
                _declare(scope, masked[start : after[0] if after else len(masked)])
            if not after or not masked[after[0] + 1:].strip():
                break
            cut = after[0] + 1
            masked = "".join(c if c == "\n" else " " for c in masked[:cut]) + masked[cut:]
            continue
        check_all(statements)
        break
    unique: dict[tuple[int, int, str, bool], Finding] = {}  # an unknown function in EVAL: found twice
    for f in sorted(findings, key=lambda f: (f.line, f.column, -f.length)):
        unique.setdefault((f.line, f.column, f.message, f.warning), f)
    return list(unique.values())


def resolve_statement(scope: ScriptScope, ps: ParsedStatement, text: str) -> list[Finding]:
    """The name findings of one statement of ``text`` (whose names are then defined in ``scope``)."""
    return [_finding_at(text, p.offset, p.message, p.warning, p.length) for p in scope.resolve(ps, text)]


def _declare(scope: ScriptScope, statement: str) -> None:
    """Define the name a statement with a syntax error creates, so that its uses are not reported too."""
    m = _DECLARATION.match(_strip_comments(statement))
    if m is not None:
        scope.declare((m.group(1) or m.group(2)).lower(), m.group(3))


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)


def syntax_message(err: BQLSyntaxError) -> str:
    """One line for a syntax error: its reason, without the caret snippet SensorBee's text carries."""
    lines = [x for x in err.message.splitlines() if x.strip()]
    if len(lines) >= 4 and lines[0].startswith("statement has a syntax error"):
        return f"syntax error: {lines[3]}"
    return lines[0] if lines else "syntax error"


def check_statement(ps: ParsedStatement, text: str, registry: Any = None) -> list[Finding]:
    """Findings of one parsed statement (analysis error or warnings, parameter and EVAL errors);
    ``registry`` (default: the built-ins) decides function arities and aggregates."""
    try:
        stmt = prepare(ps.stmt)
        warnings = analyze(stmt, ps.text, registry)
        check_builtin_params(stmt)
        if isinstance(stmt, Eval):
            _fold_eval(stmt, registry)
    except BQLError as err:
        return [_finding(err.span, ps, text, err.message)]
    return [_finding(w.span, ps, text, w.message, warning=True) for w in warnings]


def _fold_eval(stmt: Eval, registry: Any = None) -> None:
    """Evaluate a constant EVAL with the built-in functions; one that calls a plugin function of
    ``registry`` is not run here (a plugin may need the topology's states or have side effects)."""
    from sbpy.bql.eval import evaluate_constant
    from sbpy.bql.functions import builtin_registry

    if registry is not None:
        builtins = builtin_registry()
        for n in stmt.walk():
            if isinstance(n, FunctionCall) and n.name in registry and n.name not in builtins:
                return
    evaluate_constant(stmt.expr, on=stmt.on)


def _finding(span: Span | None, ps: ParsedStatement, text: str, message: str, warning: bool = False) -> Finding:
    return _finding_at(text, _absolute(span, ps), message, warning)


def _finding_at(text: str, offset: int, message: str, warning: bool = False, length: int = 1) -> Finding:
    offset = max(0, min(offset, len(text)))
    line, col = line_col(text, offset)
    first = message.splitlines()[0] if message else "error"
    line_end = text.find("\n", offset)
    room = (len(text) if line_end < 0 else line_end) - offset
    return Finding(line, col, first, warning, max(1, min(length, room)))


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
