"""Name resolution across a script: every name a statement uses must exist when it runs.

``ScriptScope`` follows a script statement by statement, as a topology would run it: CREATE SOURCE /
STREAM / SINK / STATE and LOAD STATE add a name, DROP removes it, and every other use must find it.
It checks, without running anything:

- functions (built-ins and plugin UDFs/UDAFs) and UDSFs in FROM;
- source, sink and state types of CREATE SOURCE / SINK / STATE and LOAD STATE;
- streams and sources read in FROM (a UDSF reads the stream named by its first string-constant
  argument, the server's rule), INSERT INTO's sink and input, the node of DROP / UPDATE / PAUSE /
  RESUME / REWIND, the state of SAVE / DROP / UPDATE STATE, the state named by the first argument of a
  function that reads states (``jubaclassify("model", fv)``) and by a ``uds`` sink's ``name``;
- a new node's name against the sources, streams and sinks (one namespace), a new state's against
  the states.

Messages are the server's (``stream 'x' was not found``) plus ``(did you mean 'y'?)`` from
``difflib.get_close_matches``. ``Existing`` seeds the scope with a running topology's nodes; its
``states`` None means they cannot be listed, and a state that the script does not create is then a
warning, not an error. What exists is given by the caller (``Catalog``): this module imports no
plugin, server or Spark code::

    >>> from sbpy.bql.parser import parse_script
    >>> script = 'CREATE SOURCE sensor TYPE file WITH path = "x";\\nSELECT RSTREAM * FROM senser [RANGE 1 TUPLES];'
    >>> scope = ScriptScope(Catalog(source_types=frozenset({"file"})))
    >>> [p.message for ps in parse_script(script) for p in scope.resolve(ps, script)]
    ["stream 'senser' was not found (did you mean 'sensor'?)"]
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ..ast import (
    CreateSink,
    CreateSource,
    CreateState,
    CreateStreamAsSelect,
    DropNode,
    Explain,
    FunctionCall,
    HistoryTable,
    InsertInto,
    Literal,
    LoadState,
    MatchRecognize,
    Node,
    SaveState,
    Select,
    SelectUnion,
    SourceControl,
    Statement,
    StreamRef,
    SubqueryRef,
    UdsfCall,
    UpdateNode,
    WindowFunction,
)
from ..parsed import ParsedStatement

NODE_KINDS = ("source", "stream", "sink")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Catalog:
    """What is registered (lower-case names). ``loadable_state_types`` None: not known which state
    types support LOAD STATE. ``state_functions``: functions whose first argument names a state.
    ``state_sinks``: sink type → the parameter naming the state it writes to."""

    functions: Collection[str] = frozenset()
    udsfs: Collection[str] = frozenset()
    source_types: Collection[str] = frozenset()
    sink_types: Collection[str] = frozenset()
    state_types: Collection[str] = frozenset()
    loadable_state_types: Collection[str] | None = None
    state_functions: Collection[str] = frozenset()
    state_sinks: Mapping[str, str] = field(default_factory=lambda: {"uds": "name"})


@dataclass(frozen=True)
class Existing:
    """Nodes that exist before the script runs (a running topology); ``states`` None: unknown."""

    sources: Collection[str] = frozenset()
    streams: Collection[str] = frozenset()
    sinks: Collection[str] = frozenset()
    states: Collection[str] | None = frozenset()


@dataclass(frozen=True)
class NameProblem:
    """An unresolved or clashing name at ``offset`` (in the script) spanning ``length`` characters."""

    message: str
    offset: int
    length: int = 1
    warning: bool = False


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` with the closest candidate, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def udsf_input(call: UdsfCall) -> str | None:
    """The stream a UDSF reads: its first string-constant argument (the server's rule), lower-case."""
    for arg in call.args:
        if isinstance(arg, Literal) and isinstance(arg.value, str):
            return arg.value.lower()
    return None


class ScriptScope:
    """The names defined so far in a script; ``resolve`` checks one statement and applies it."""

    def __init__(self, catalog: Catalog, existing: Existing | None = None):
        existing = existing or Existing()
        self.catalog = catalog
        self.nodes: dict[str, dict[str, str]] = {  # kind → name → type ("" for streams)
            "source": dict.fromkeys(existing.sources, ""),
            "stream": dict.fromkeys(existing.streams, ""),
            "sink": dict.fromkeys(existing.sinks, ""),
        }
        self.states: dict[str, str] = dict.fromkeys(existing.states or (), "")
        self.states_listed = existing.states is not None
        self._problems: list[NameProblem] = []
        self._text = ""
        self._region = (0, 0)

    # ------------------------------------------------------------ entry point

    def resolve(self, ps: ParsedStatement, script: str) -> list[NameProblem]:
        """The name problems of ``ps`` (spans relative to ``script``); then its names are applied."""
        self._problems, self._text = [], script
        self._region = (ps.offset, ps.offset + len(ps.text))
        stmt = ps.stmt
        self._functions(stmt)
        if isinstance(stmt, Explain):  # reads what it explains, creates nothing
            inner = stmt.statement
            if isinstance(inner, CreateStreamAsSelect):
                self._reads(inner.select, own=inner.name.lower())
            else:
                self._reads(inner)
        elif isinstance(stmt, (Select, SelectUnion)):
            self._reads(stmt)
        elif isinstance(stmt, CreateStreamAsSelect):
            self._reads(stmt.select, own=stmt.name.lower())
            self._create_node("stream", stmt.name, "", "stream")
        elif isinstance(stmt, CreateSource):
            self._type("source", stmt.type_name, self.catalog.source_types)
            self._create_node("source", stmt.name, stmt.type_name, "source")
        elif isinstance(stmt, CreateSink):
            self._type("sink", stmt.type_name, self.catalog.sink_types)
            self._uds_sink_state(stmt)
            self._create_node("sink", stmt.name, stmt.type_name, "sink")
        elif isinstance(stmt, CreateState):
            self._type("state", stmt.type_name, self.catalog.state_types)
            self._create_state(stmt)
        elif isinstance(stmt, LoadState):
            self._load_state(stmt)
        elif isinstance(stmt, InsertInto):
            self._need_node("sink", stmt.sink, self._name_at(stmt.sink, "into"))
            self._need_input(stmt.stream, self._name_at(stmt.stream, "from"))
        elif isinstance(stmt, DropNode):
            self._drop(stmt)
        elif isinstance(stmt, (UpdateNode, SourceControl)):
            kind = stmt.kind.lower() if isinstance(stmt, UpdateNode) else "source"
            self._need(kind, stmt.name, self._name_at(stmt.name, kind))
        elif isinstance(stmt, SaveState):
            self._need_state(stmt.name, self._name_at(stmt.name, "state"))
        return self._problems

    def declare(self, kind: str, name: str) -> None:
        """Define ``name`` without checks (a statement that did not parse still creates it: its later
        uses should not be reported too). ``kind`` is source, stream, sink or state."""
        if kind == "state":
            self.states.setdefault(name.lower(), "")
        elif kind in self.nodes:
            self.nodes[kind].setdefault(name.lower(), "")

    # ------------------------------------------------------------ uses

    def _functions(self, stmt: Statement) -> None:
        known = self.catalog.functions
        for n in _walk(stmt):
            if isinstance(n, FunctionCall):
                if n.name.lower() not in known:
                    self._report(f"function '{n.name.lower()}' is not registered{did_you_mean(n.name.lower(), known)}",
                                 _start(n), len(n.name))
                elif n.name.lower() in self.catalog.state_functions and n.args:
                    first = n.args[0]
                    if isinstance(first, Literal) and isinstance(first.value, str):
                        self._need_state(first.value, (_start(first), len(first.value) + 2))
            elif isinstance(n, UdsfCall) and n.name.lower() not in self.catalog.udsfs:
                self._report(f"UDSF '{n.name.lower()}' is not registered{did_you_mean(n.name.lower(), self.catalog.udsfs)}",
                             _start(n), len(n.name))

    def _reads(self, stmt: Statement, own: str | None = None) -> None:
        """Every stream or source the SELECT(s) of ``stmt`` read in FROM."""
        selects = stmt.selects if isinstance(stmt, SelectUnion) else (stmt,) if isinstance(stmt, Select) else ()
        for select in selects:
            for item in select.from_items:
                if isinstance(item, MatchRecognize) and isinstance(item.input, SubqueryRef):
                    item = item.input
                elif isinstance(item, WindowFunction) and item.source is not None:
                    item = item.source
                if isinstance(item, SubqueryRef):
                    self._reads(item.select, own)
                    continue
                for name, where in self._item_inputs(item):
                    if name == own:
                        self._report(f"stream '{own}' cannot read from itself", *where)
                    else:
                        self._need_input(name, where)

    def _item_inputs(self, item: Node) -> Iterator[tuple[str, tuple[int, int]]]:
        """(name, (offset, length)) of the node a FROM item reads."""
        if isinstance(item, MatchRecognize):
            item = item.input
        if isinstance(item, StreamRef):
            yield item.name.lower(), (_start(item), len(item.name))
        elif isinstance(item, WindowFunction):
            start = _start(item)
            end = item.span.end if item.span is not None else len(self._text)
            yield item.stream.lower(), self._word_in(item.stream, start + len(item.kind), end)
        elif isinstance(item, HistoryTable):  # table(x): x must exist (its history: checked when run)
            start = _start(item)
            end = item.span.end if item.span is not None else len(self._text)
            yield item.stream.lower(), self._word_in(item.stream, start + len("table"), end)
        elif isinstance(item, UdsfCall):
            arg = next((a for a in item.args if isinstance(a, Literal) and isinstance(a.value, str)), None)
            if arg is not None:
                yield udsf_input(item) or "", (_start(arg), len(str(arg.value)) + 2)

    def _need_input(self, name: str, where: tuple[int, int]) -> None:
        key = name.lower()
        if key in self.nodes["source"] or key in self.nodes["stream"]:
            return
        if key in self.nodes["sink"]:
            self._report(f"'{key}' is a sink and cannot be read from", *where)
            return
        candidates = [*self.nodes["source"], *self.nodes["stream"]]
        self._report(f"stream '{key}' was not found{did_you_mean(key, candidates)}", *where)

    def _need(self, kind: str, name: str, where: tuple[int, int]) -> None:
        if kind == "state":
            self._need_state(name, where)
        else:
            self._need_node(kind, name, where)

    def _need_node(self, kind: str, name: str, where: tuple[int, int]) -> None:
        key = name.lower()
        if key in self.nodes[kind]:
            return
        other = next((k for k in NODE_KINDS if key in self.nodes[k]), None)
        hint = f" ('{key}' is a {other})" if other else did_you_mean(key, self.nodes[kind])
        self._report(f"{kind} '{key}' was not found{hint}", *where)

    def _need_state(self, name: str, where: tuple[int, int]) -> None:
        key = name.lower()
        if key in self.states:
            return
        if not self.states_listed:
            self._report(f"state '{key}' is not created by this script (the server's states cannot be listed)",
                         *where, warning=True)
            return
        self._report(f"state '{key}' was not found{did_you_mean(key, self.states)}", *where)

    def _type(self, kind: str, type_name: str, known: Collection[str]) -> None:
        key = type_name.lower()
        if key not in known:
            self._report(f"{kind} type '{key}' is not registered{did_you_mean(key, known)}",
                         *self._name_at(type_name, "type"))

    def _uds_sink_state(self, stmt: CreateSink) -> None:
        param = self.catalog.state_sinks.get(stmt.type_name.lower())
        for p in stmt.params:
            if p.name.lower() == param and isinstance(p.value, Literal) and isinstance(p.value.value, str):
                self._need_state(p.value.value, (_start(p.value), len(p.value.value) + 2))

    # ------------------------------------------------------------ definitions

    def _create_node(self, kind: str, name: str, type_name: str, keyword: str) -> None:
        key = name.lower()
        for other in NODE_KINDS:
            if key in self.nodes[other]:
                self._report(f"{other} '{key}' already exists", *self._name_at(name, keyword))
                return
        self.nodes[kind][key] = type_name.lower()

    def _create_state(self, stmt: CreateState) -> None:
        key = stmt.name.lower()
        if key in self.states:
            self._report(f"state '{key}' already exists", *self._name_at(stmt.name, "state"))
            return
        self.states[key] = stmt.type_name.lower()

    def _load_state(self, stmt: LoadState) -> None:
        key, type_name = stmt.name.lower(), stmt.type_name.lower()
        where = self._name_at(stmt.type_name, "type")
        loadable = self.catalog.loadable_state_types
        if type_name not in self.catalog.state_types:
            self._type("state", type_name, self.catalog.state_types)
        elif loadable is not None and type_name not in loadable:
            self._report(f"state type '{type_name}' does not support LOAD STATE", *where)
        existing = self.states.get(key)
        if existing and existing != type_name:
            self._report(f"state '{key}' has type '{existing}', not '{type_name}'", *where)
            return
        self.states[key] = type_name

    def _drop(self, stmt: DropNode) -> None:
        kind, key = stmt.kind.lower(), stmt.name.lower()
        where = self._name_at(stmt.name, kind)
        if kind == "state":
            self._need_state(key, where)
            self.states.pop(key, None)
        elif kind in self.nodes:
            self._need_node(kind, key, where)
            self.nodes[kind].pop(key, None)

    # ------------------------------------------------------------ positions

    def _report(self, message: str, offset: int, length: int = 1, warning: bool = False) -> None:
        self._problems.append(NameProblem(message, offset, max(length, 1), warning))

    def _name_at(self, name: str, after: str) -> tuple[int, int]:
        """Offset and length of the word ``name`` following the keyword ``after`` in this statement
        (statement-level names carry no span of their own); the statement's start if not found."""
        words = list(_words(self._text, *self._region))
        for i, (word, _) in enumerate(words):
            if word == after.lower():
                for later, offset in words[i + 1:]:
                    if later == name.lower():
                        return offset, len(name)
        return self._region[0], 1

    def _word_in(self, name: str, start: int, end: int) -> tuple[int, int]:
        for word, offset in _words(self._text, start, end):
            if word == name.lower():
                return offset, len(name)
        return start, 1


def _start(node: Node) -> int:
    return node.span.start if node.span is not None else 0


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children():
        yield from _walk(child)


def _words(text: str, start: int, end: int) -> Iterator[tuple[str, int]]:
    """Lower-cased identifier words of ``text[start:end]`` with their offsets (strings and comments skipped)."""
    i = start
    while i < end:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < end:
                if text[j] == c:
                    if not text.startswith(c * 2, j):
                        break
                    j += 1  # a doubled quote stands for itself
                j += 1
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = end if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = end if j < 0 else j + 2
        else:
            m = _WORD.match(text, i, end)
            if m is None:
                i += 1
                continue
            yield m.group().lower(), i
            i = m.end()
