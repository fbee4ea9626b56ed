"""``sbpy shell [-t T] [--uri URI] [--format json|table]``: send BQL statements to a server and print
the answers.

On a terminal the shell is interactive (prompt_toolkit, as pgcli): a ``T> `` prompt, history in
``~/.sbpy_history`` with suggestions from it, BQL highlighting (``shell_lexer``), completion of
statements, keywords, functions and the topology's nodes fetched live (``shell_completer``);
statements span lines until ``;``; Ctrl-D or ``exit`` leaves. Otherwise statements are read from
stdin. Lines starting with ``--`` are comments.

Shell commands: ``USE <topology>``, ``FILE <path>``, ``help [statement]``, ``\\t [table|json]``
(toggles or sets the output format), ``exit``.

Answers (``shell_render``): EVAL prints its value, SELECT one row per tuple (JSON lines, or a table)
until the query ends or Ctrl-C cancels it, other statements a one-line acknowledgement
(``CREATE STREAM s``: on stdout when interactive, on stderr when reading a pipe, so stdout keeps only
data), errors SensorBee's ``request failed: CODE: message`` with the caret snippet. While a statement
waits for its answer or a SELECT for its first row, a status line with a spinner and the elapsed time
shows on a terminal. Ctrl-C at any moment cancels the running statement (a SELECT's connection is
closed, which ends the query on the server) and returns to the prompt; the exit code of a piped
session is 1 if any statement failed.
"""
from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from .client import ApiClient, QueryResult, RequestFailed
from .options import add_client_options
from .shell_completer import ShellNames
from .shell_help import help_text
from .shell_render import FORMATS, Renderer, StatusLine, acknowledgement, error_lines

HISTORY_FILE = Path("~/.sbpy_history")


def split_statements(text: str) -> tuple[list[str], str]:
    """Complete statements of ``text`` (each with its ``;``) and the unfinished rest.

    ``;`` inside quotes or ``--`` comments does not end a statement.
    """
    statements: list[str] = []
    start, i, quote, n = 0, 0, "", len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "\"'`":
            quote = c
        elif c == "-" and text.startswith("--", i):
            newline = text.find("\n", i)
            i = n if newline < 0 else newline
            continue
        elif c == ";":
            stmt = text[start : i + 1].strip()
            if _strip_comments(stmt) != ";":
                statements.append(stmt)
            start = i + 1
        i += 1
    return statements, text[start:]


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("--")).strip()


class Shell:
    """Runs statements and shell commands against one server, printing to ``out``/``err``.

    ``live`` is True in the interactive loop: acknowledgements go to ``out`` and, when ``err`` is a
    terminal, the status line is drawn there.
    """

    def __init__(self, client: ApiClient, topology: str | None, out: TextIO | None = None,
                 err: TextIO | None = None, fmt: str = "json"):
        self.client, self.topology = client, topology
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.render = Renderer(self.out, self.err, fmt)
        self.names = ShellNames()
        self.failed = False
        self.live = False
        self._pending = ""

    # -- commands

    def command(self, line: str) -> bool | None:
        """Handle a shell command line; None if ``line`` is not one, False for ``exit``."""
        words = line.strip().rstrip(";").split()
        if not words:
            return True
        head = words[0].lower()
        if head in ("exit", "quit", "\\q") and len(words) == 1:
            return False
        if head == "use" and len(words) == 2:
            self.topology = words[1]
            self.names.refresh(self.client, self.topology)
            return True
        if head == "file" and len(words) >= 2:
            path = line.strip().rstrip(";").split(None, 1)[1].strip()
            self.run_file(Path(path).expanduser())
            return True
        if head in ("help", "\\?", "\\h"):
            self.render.text(help_text(" ".join(words[1:])))
            return True
        if head == "\\t" and len(words) <= 2:
            self.set_format(words[1].lower() if len(words) == 2 else None)
            return True
        return None

    def set_format(self, fmt: str | None) -> None:
        """``\\t``: toggle table/json, or set ``fmt``."""
        if fmt is None:
            fmt = "json" if self.render.format == "table" else "table"
        if fmt not in FORMATS:
            self._fail(f"unknown output format '{fmt}': use \\t table or \\t json")
            return
        self.render.format = fmt
        self.render.end_rows()
        self.render.text(f"output format: {fmt}", to_err=not self.live)

    def run_file(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            self._fail(f"cannot read '{path}': {exc.strerror}")
            return
        statements, rest = split_statements(text)
        if _strip_comments(rest):
            statements.append(rest.strip())
        for stmt in statements:
            self.statement(stmt)

    # -- statements

    def statement(self, text: str) -> None:
        """Send one statement to the current topology and print its answer; Ctrl-C cancels it."""
        if not self.topology:
            self._fail("no topology is selected: run 'USE <topology>' first or pass -t")
            return
        waiting = "waiting for the first row" if acknowledgement(text).startswith("SELECT") else "running"
        status = StatusLine(self.err, waiting, enabled=self.live and self.err.isatty()).start()
        result: QueryResult | None = None
        try:
            result = self.client.queries(self.topology, text)
            if result.kind == "select":
                status.message = "waiting for the first row"
                self._stream(result, status)
                return
            status.stop()
            if result.kind == "eval":
                self.render.value(result.value)
            elif result.kind == "explain":
                self.render.text(str(result.value.get("text", "")))
            else:
                self._acknowledge(result, text)
        except KeyboardInterrupt:
            status.stop()
            self.render.text("cancelled", to_err=True)
        except RequestFailed as err:
            status.stop()
            self._report(err)
        finally:
            status.stop()
            if result is not None:
                result.close()

    def _acknowledge(self, result: QueryResult, text: str) -> None:
        done = result.body.get("queries") or []
        statements = [str(q.get("statement", "")) for q in done if isinstance(q, dict)] or [text]
        for stmt in statements:
            self.names.note_statement(stmt)
            self.render.text(acknowledgement(stmt), to_err=not self.live)
        self.names.refresh(self.client, self.topology)

    def _stream(self, result: QueryResult, status: StatusLine) -> None:
        """Print the rows until the query ends; Ctrl-C (``KeyboardInterrupt``) is the caller's."""
        rows = 0
        try:
            for row in result.rows or ():
                if not rows:
                    status.stop()
                rows += 1
                self.render.row(row)
        except RequestFailed as err:
            status.stop()
            self._report(err)
        except KeyboardInterrupt:
            status.stop()
            self.render.text(f"cancelled after {rows} row{'' if rows == 1 else 's'}", to_err=True)
        except Exception as exc:  # noqa: BLE001 - the connection broke
            status.stop()
            self._fail(f"the SELECT stream ended: {exc}")
        finally:
            self.render.end_rows()

    # -- output

    def _fail(self, message: str) -> None:
        self.failed = True
        self.render.text(message, to_err=True)

    def _report(self, err: RequestFailed) -> None:
        """``request failed: CODE: message`` then the parse errors or the caret snippet."""
        self._fail("\n".join(error_lines(err)))

    # -- loops

    def run_lines(self, lines: Iterator[str]) -> None:
        """Feed input lines: commands act at once, statements run when their ``;`` arrives."""
        buffer = ""
        for line in lines:
            if not buffer.strip():
                if line.strip().startswith("--"):
                    continue
                handled = self.command(line)
                if handled is False:
                    return
                if handled is not None:
                    continue
            buffer += line if line.endswith("\n") else line + "\n"
            statements, buffer = split_statements(buffer)
            for stmt in statements:
                self.statement(stmt)
        if _strip_comments(buffer):
            self.statement(buffer.strip())

    def interactive(self, history_file: Path | None = None, **session_options: object) -> None:
        """The prompt_toolkit loop; Ctrl-C drops the current input or cancels the running statement,
        Ctrl-D leaves. ``session_options`` go to ``PromptSession`` (tests pass ``input``/``output``)."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.lexers import PygmentsLexer
        from prompt_toolkit.styles import Style

        from .shell_completer import BqlCompleter
        from .shell_lexer import PROMPT_STYLE, BqlLexer

        self.live = True
        self.names.refresh(self.client, self.topology)
        threading.Thread(target=self.names.load_catalog, daemon=True, name="sbpy-shell-catalog").start()
        history = (history_file or HISTORY_FILE).expanduser()
        session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)), auto_suggest=AutoSuggestFromHistory(),
            completer=BqlCompleter(self.names, lambda: self._pending), complete_while_typing=True,
            lexer=PygmentsLexer(BqlLexer), style=Style.from_dict(PROMPT_STYLE), **session_options,
        )
        self._pending = ""
        while True:
            prompt = f"{self.topology or ''}> " if not self._pending else "... "
            try:
                line = session.prompt(prompt)
            except KeyboardInterrupt:
                self._pending = ""
                continue
            except EOFError:
                return
            try:
                if self._handle_line(line) is False:
                    return
            except KeyboardInterrupt:
                self.render.text("cancelled", to_err=True)

    def _handle_line(self, line: str) -> bool:
        """One line typed at the prompt; False for ``exit``."""
        if not self._pending.strip() and not line.strip().startswith("--"):
            handled = self.command(line)
            if handled is not None:
                return handled
        statements, self._pending = split_statements(self._pending + line + "\n")
        if not _strip_comments(self._pending):
            self._pending = ""
        for stmt in statements:
            self.statement(stmt)
        return True


def run(args: argparse.Namespace) -> int:
    """Interactive on a terminal, else read statements from stdin; 1 if any piped statement failed."""
    with ApiClient(args.uri, args.api_version) as client:
        shell = Shell(client, args.topology or None, fmt=args.format)
        if sys.stdin.isatty() and sys.stdout.isatty():
            shell.interactive()
            return 0
        shell.run_lines(iter(sys.stdin))
    return 1 if shell.failed else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``shell`` (alias ``bql``)."""
    parser = subparsers.add_parser("shell", aliases=["bql"], help="send BQL statements to a server")
    parser.add_argument("-t", "--topology", default="", help="the topology to use (see USE)")
    parser.add_argument("-f", "--format", choices=FORMATS, default="json",
                        help="how SELECT rows and EVAL values print (default json; \\t switches)")
    add_client_options(parser)
    parser.set_defaults(func=run)
