"""``sbpy shell [-t T] [--uri URI]``: send BQL statements to a server and print the answers.

Interactive on a terminal (prompt_toolkit: ``T> `` prompt, history in ``~/.sbpy_history``,
statements span lines until ``;``, keyword completion, Ctrl-D or ``exit`` to leave); otherwise the
statements are read from stdin. Shell commands: ``USE <topology>``, ``FILE <path>``, ``exit``;
lines starting with ``--`` are comments. EVAL prints its JSON result, SELECT one JSON line per tuple
until the query ends or Ctrl-C, errors ``request failed: CODE: message`` and the caret snippet.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import orjson

from .client import ApiClient, RequestFailed
from .topology import add_client_options

HISTORY_FILE = Path("~/.sbpy_history")
KEYWORDS = (
    "SELECT", "RSTREAM", "ISTREAM", "DSTREAM", "FROM", "WHERE", "GROUP BY", "HAVING", "UNION ALL",
    "RANGE", "TUPLES", "SECONDS", "MILLISECONDS", "CREATE", "SOURCE", "STREAM", "SINK", "STATE",
    "PAUSED", "TYPE", "WITH", "AS", "INSERT INTO", "UPDATE", "SET", "DROP", "PAUSE", "RESUME",
    "REWIND", "SAVE", "LOAD", "TAG", "EVAL", "ON", "USE", "FILE", "EXIT", "MATCH_RECOGNIZE",
    "PARTITION BY", "ORDER BY", "MEASURES", "PATTERN", "DEFINE", "LIMIT", "EMIT", "AND", "OR", "NOT",
)


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
    """Runs statements and shell commands against one server, printing to ``out``/``err``."""

    def __init__(self, client: ApiClient, topology: str | None, out: TextIO | None = None,
                 err: TextIO | None = None):
        self.client, self.topology = client, topology
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self.failed = False

    # -- commands

    def command(self, line: str) -> bool | None:
        """Handle a shell command line; None if ``line`` is not one, False for ``exit``."""
        words = line.strip().rstrip(";").split()
        if not words:
            return True
        head = words[0].lower()
        if head in ("exit", "quit") and len(words) == 1:
            return False
        if head == "use" and len(words) == 2:
            self.topology = words[1]
            return True
        if head == "file" and len(words) >= 2:
            path = line.strip().rstrip(";").split(None, 1)[1].strip()
            self.run_file(Path(path).expanduser())
            return True
        return None

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
        """Send one statement to the current topology and print its answer."""
        if not self.topology:
            self._fail("no topology is selected: run 'USE <topology>' first or pass -t")
            return
        try:
            result = self.client.queries(self.topology, text)
        except RequestFailed as err:
            self._report(err)
            return
        if result.kind == "eval":
            self._print(result.value)
        elif result.kind == "explain":
            self.out.write(str(result.value.get("text", "")) + "\n")
        elif result.kind == "select":
            self._stream(result)

    def _stream(self, result) -> None:
        try:
            for row in result.rows or ():
                self._print(row)
        except KeyboardInterrupt:
            pass
        except RequestFailed as err:
            self._report(err)
        except Exception as exc:  # noqa: BLE001 - the connection broke
            self._fail(f"the SELECT stream ended: {exc}")
        finally:
            result.close()

    # -- output

    def _print(self, value: object) -> None:
        self.out.write(orjson.dumps(value).decode("utf-8") + "\n")
        self.out.flush()

    def _fail(self, message: str) -> None:
        self.failed = True
        self.err.write(message + "\n")
        self.err.flush()

    def _report(self, err: RequestFailed) -> None:
        """``request failed: CODE: message`` then the parse errors or the caret snippet."""
        if not err.code:
            self._fail(f"request failed: {err.message}")
            return
        meta = err.meta
        lines = [f"request failed: {err.code}: {err.message}"]
        if err.code == "E0006":
            lines += [str(line) for line in meta.get("parse_errors", [])]
        elif err.code == "E0007" and "error" in meta:
            lines[0] += f": {meta['error']}"
            lines += [str(line) for line in meta.get("snippet", [])]
        elif meta:
            lines[0] += f": {orjson.dumps(meta).decode()}"
        self._fail("\n".join(lines))

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
        """The prompt_toolkit loop; Ctrl-C drops the current input, Ctrl-D leaves.

        ``session_options`` go to ``PromptSession`` (tests pass ``input``/``output``).
        """
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory

        history = (history_file or HISTORY_FILE).expanduser()
        session: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)),
            completer=WordCompleter(list(KEYWORDS), ignore_case=True, sentence=True),
            **session_options,
        )
        buffer = ""
        while True:
            prompt = f"{self.topology or ''}> " if not buffer else "... "
            try:
                line = session.prompt(prompt)
            except KeyboardInterrupt:
                buffer = ""
                continue
            except EOFError:
                return
            if not buffer.strip() and not line.strip().startswith("--"):
                handled = self.command(line)
                if handled is False:
                    return
                if handled is not None:
                    continue
            statements, buffer = split_statements(buffer + line + "\n")
            for stmt in statements:
                self.statement(stmt)
            if not _strip_comments(buffer):
                buffer = ""


def run(args: argparse.Namespace) -> int:
    """Interactive on a terminal, else read statements from stdin; 1 if any statement failed."""
    with ApiClient(args.uri, args.api_version) as client:
        shell = Shell(client, args.topology or None)
        if sys.stdin.isatty() and sys.stdout.isatty():
            shell.interactive()
            return 0
        else:
            shell.run_lines(iter(sys.stdin))
    return 1 if shell.failed else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``shell`` (alias ``bql``)."""
    parser = subparsers.add_parser("shell", aliases=["bql"], help="send BQL statements to a server")
    parser.add_argument("-t", "--topology", default="", help="the topology to use (see USE)")
    add_client_options(parser)
    parser.set_defaults(func=run)
