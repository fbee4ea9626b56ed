"""Tab completion for ``sbpy shell``: statements, keywords, functions and the live topology's names.

``ShellNames`` holds what can be completed besides keywords:

- the sources, streams and sinks of the current topology, fetched from the server
  (``GET /topologies/<t>/sources|streams|sinks``) in a background thread by ``refresh()``, which the
  shell calls at start, after ``USE`` and after each statement that changed the topology;
- its states: the REST API does not list them, so they are the states this session created or
  loaded (``note_statement`` reads ``CREATE STATE x``, ``LOAD STATE x``, ``DROP STATE x``);
- functions, UDSFs and source/sink/state types: the built-ins, installed plugins
  (``sbpy.server.cli.catalog``), loaded once in the background;
- the server's topologies (for ``USE``).

``BqlCompleter`` completes the word before the cursor from what the words before it allow:

================================  ===========================================================
before the word                    candidates
================================  ===========================================================
nothing (a new statement)          statement openers (``CREATE STREAM``, ``SELECT``, ...) and
                                   shell commands (``USE``, ``FILE``, ``help``, ``exit``, ``\\t``)
``CREATE``                         ``SOURCE``, ``PAUSED SOURCE``, ``STREAM``, ``SINK``, ``STATE``
``DROP``/``UPDATE``                ``SOURCE``, ``STREAM``, ``SINK``, ``STATE``
``DROP|UPDATE|PAUSE|... SOURCE``   source names (``STREAM``: streams, ``SINK``: sinks,
                                   ``STATE``: states)
``INTO``                           sink names
``FROM``, ``JOIN``, ``,`` in FROM  sources, streams and UDSFs
``CREATE SOURCE x TYPE`` (SINK,    the source (sink, state) types
STATE, ``LOAD STATE x TYPE``)
``USE``                            topologies; ``help``: help topics; ``\\t``: formats
anything else                      keywords, functions, sources and streams
================================  ===========================================================

Keywords are inserted upper-case unless the word typed so far is lower-case.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from .client import ApiClient, RequestFailed
from .shell_help import topics
from .shell_lexer import grammar_keywords
from .shell_render import FORMATS

OPENERS = ("SELECT", "CREATE SOURCE", "CREATE PAUSED SOURCE", "CREATE STREAM", "CREATE SINK",
           "CREATE STATE", "INSERT INTO", "DROP SOURCE", "DROP STREAM", "DROP SINK", "DROP STATE",
           "PAUSE SOURCE", "RESUME SOURCE", "REWIND SOURCE", "UPDATE SOURCE", "UPDATE SINK",
           "UPDATE STATE", "SAVE STATE", "LOAD STATE", "EVAL", "EXPLAIN")
SHELL_COMMANDS = ("USE", "FILE", "help", "exit", "\\t")
NODE_KINDS = ("SOURCE", "STREAM", "SINK", "STATE")
FOLLOWERS: dict[str, tuple[str, ...]] = {
    "CREATE": ("SOURCE", "PAUSED SOURCE", "STREAM", "SINK", "STATE"),
    "DROP": NODE_KINDS, "UPDATE": NODE_KINDS,
    "PAUSE": ("SOURCE",), "RESUME": ("SOURCE",), "REWIND": ("SOURCE",),
    "SAVE": ("STATE",), "LOAD": ("STATE",), "INSERT": ("INTO",),
}
_TOKEN = re.compile(r'"(?:[^"]|"")*"?|\'(?:[^\']|\'\')*\'?|--[^\n]*|[A-Za-z_][A-Za-z0-9_]*|\\\w*|\S')
_STATE_CHANGE = re.compile(r"^\s*(CREATE|LOAD|DROP)\s+STATE\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


@dataclass
class ShellNames:
    """The names the completer offers (see the module doc); updated by background threads."""

    sources: tuple[str, ...] = ()
    streams: tuple[str, ...] = ()
    sinks: tuple[str, ...] = ()
    states: set[str] = field(default_factory=set)
    topologies: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    udsfs: tuple[str, ...] = ()
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)  # SOURCE/SINK/STATE -> type names

    def fetch_nodes(self, client: ApiClient, topology: str | None) -> None:
        """Read the topology's nodes and the topology list from the server (errors leave them as
        they were: completion is a convenience)."""
        try:
            self.topologies = tuple(client.list_topologies())
            if not topology:
                return
            found = {}
            for kind in ("source", "stream", "sink"):
                body = client.request("GET", f"/topologies/{topology}/{kind}s")
                found[kind] = tuple(str(node["name"]) for node in body[f"{kind}s"])
        except (RequestFailed, KeyError, TypeError, ValueError, RuntimeError):  # RuntimeError: client closed
            return
        self.sources, self.streams, self.sinks = found["source"], found["stream"], found["sink"]

    def load_catalog(self) -> None:
        """Functions, UDSFs and types of the built-ins and installed plugins."""
        from .catalog import catalog_of, load_registries

        try:
            catalog = catalog_of(load_registries(None))
        except Exception:  # noqa: BLE001 - a broken plugin must not break the shell
            return
        self.functions, self.udsfs = tuple(sorted(catalog.functions)), tuple(sorted(catalog.udsfs))
        self.types = {"SOURCE": tuple(sorted(catalog.source_types)), "SINK": tuple(sorted(catalog.sink_types)),
                      "STATE": tuple(sorted(catalog.state_types))}

    def refresh(self, client: ApiClient, topology: str | None) -> threading.Thread:
        """``fetch_nodes`` in a daemon thread (returned, so a caller may join it)."""
        thread = threading.Thread(target=self.fetch_nodes, args=(client, topology), daemon=True,
                                  name="sbpy-shell-names")
        thread.start()
        return thread

    def note_statement(self, statement: str) -> None:
        """Track the states a successful statement created, loaded or dropped."""
        match = _STATE_CHANGE.match(statement)
        if match is None:
            return
        if match.group(1).upper() == "DROP":
            self.states.discard(match.group(2))
        else:
            self.states.add(match.group(2))


def tokens(text: str) -> list[str]:
    """The words, strings and symbols of ``text`` (comments dropped)."""
    return [t for t in _TOKEN.findall(text) if not t.startswith("--")]


class BqlCompleter(Completer):
    """Completes BQL and shell commands; ``pending()`` is the unfinished statement typed on earlier
    lines (the shell reads a statement line by line)."""

    def __init__(self, names: ShellNames, pending: Callable[[], str] = lambda: ""):
        self.names, self.pending = names, pending

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        before = self.pending() + document.text_before_cursor
        statement = before[before.rfind(";") + 1 :]
        word = re.search(r"\\?[A-Za-z0-9_]*$", statement).group()
        previous = [t if t[0] in "\"'" else t.upper() for t in tokens(statement[: len(statement) - len(word)])]
        for text, meta in self.candidates(previous):
            if text.lower().startswith(word.lower()):
                yield Completion(self._cased(text, word, meta), start_position=-len(word), display_meta=meta)

    @staticmethod
    def _cased(text: str, word: str, meta: str) -> str:
        if meta in ("keyword", "statement", "command") and word and word == word.lower():
            return text.lower()
        return text

    def candidates(self, previous: list[str]) -> Iterable[tuple[str, str]]:
        """(text, kind) pairs allowed after the upper-cased tokens ``previous`` of the statement."""
        names = self.names
        if not previous:
            return [(s, "statement") for s in OPENERS] + [(c, "command") for c in SHELL_COMMANDS]
        last = previous[-1]
        if len(previous) == 1 and last in ("USE", "HELP", "\\T"):
            if last == "USE":
                return [(t, "topology") for t in names.topologies]
            if last == "HELP":
                return [(t, "help") for t in topics()]
            return [(f, "format") for f in FORMATS]
        if len(previous) == 1 and last in FOLLOWERS:
            return [(w, "keyword") for w in FOLLOWERS[last]]
        if last in NODE_KINDS and len(previous) >= 2 and previous[-2] in ("CREATE", "PAUSED"):
            return []  # the name of a new node
        if last in NODE_KINDS and len(previous) >= 2 and previous[-2] in FOLLOWERS:
            return self._nodes(last)
        if last == "INTO":
            return [(s, "sink") for s in names.sinks]
        if last == "TYPE" and len(previous) >= 3 and previous[-3] in NODE_KINDS:
            return [(t, f"{previous[-3].lower()} type") for t in names.types.get(previous[-3], ())]
        if last in ("FROM", "JOIN") or (last == "," and self._in_from(previous)):
            return self._relations()
        return self._anything()

    def _nodes(self, kind: str) -> list[tuple[str, str]]:
        names = self.names
        found = {"SOURCE": names.sources, "STREAM": names.streams, "SINK": names.sinks,
                 "STATE": tuple(sorted(names.states))}[kind]
        return [(n, kind.lower()) for n in found]

    def _relations(self) -> list[tuple[str, str]]:
        names = self.names
        return ([(n, "stream") for n in names.streams] + [(n, "source") for n in names.sources]
                + [(n, "udsf") for n in names.udsfs])

    @staticmethod
    def _in_from(previous: list[str]) -> bool:
        """Whether the last clause keyword is FROM (a ``,`` there separates FROM items)."""
        for token in reversed(previous):
            if token in ("FROM", "SELECT", "WHERE", "GROUP", "HAVING", "BY", "WITH", "SET"):
                return token == "FROM"
        return False

    def _anything(self) -> list[tuple[str, str]]:
        names = self.names
        return ([(n, "stream") for n in names.streams] + [(n, "source") for n in names.sources]
                + [(f, "function") for f in names.functions]
                + [(k.upper(), "keyword") for k in sorted(grammar_keywords())])
