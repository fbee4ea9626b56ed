"""``help`` and ``help <statement>`` in ``sbpy shell``: the synopsis of each BQL statement (as in
SensorBee's reference, "BQL Statements") and of the shell's own commands.

``help_text("")`` lists every statement and command; ``help_text("create source")`` (any case, with
or without the trailing ``;``) shows that entry, a prefix (``help drop``) every entry it begins; an
unknown topic answers with the list of topics.
"""
from __future__ import annotations

STATEMENTS: dict[str, tuple[str, str, str]] = {
    # name: (synopsis, what it does, example)
    "CREATE SOURCE": (
        "CREATE [PAUSED] SOURCE name TYPE type_name [WITH param = value [, ...]]",
        "Create a source of the type; PAUSED keeps it from emitting until RESUME SOURCE.",
        'CREATE PAUSED SOURCE src TYPE file WITH path = "in.jsonl";'),
    "CREATE STREAM": (
        "CREATE STREAM name AS select",
        "Create a stream (a continuous view) computed by a SELECT, UNION ALL included.",
        "CREATE STREAM strm AS SELECT RSTREAM * FROM src [RANGE 1 TUPLES];"),
    "CREATE SINK": (
        "CREATE SINK name TYPE type_name [WITH param = value [, ...]]",
        "Create a sink of the type; INSERT INTO feeds it.",
        'CREATE SINK snk TYPE file WITH path = "out.jsonl";'),
    "CREATE STATE": (
        "CREATE STATE name TYPE type_name [WITH param = value [, ...]]",
        "Create a user-defined state (UDS).",
        "CREATE STATE my_uds TYPE my_uds_type;"),
    "INSERT INTO": (
        "INSERT INTO sink FROM stream",
        "Send the tuples of a stream or a source to a sink.",
        "INSERT INTO snk FROM strm;"),
    "SELECT": (
        ("SELECT {RSTREAM | ISTREAM | DSTREAM} {* | expression [AS name]} [, ...]\n"
         "    FROM from_item '[' RANGE n {TUPLES | SECONDS | MILLISECONDS} ']' [AS alias] [, ...]\n"
         "    [WHERE condition] [GROUP BY expression [, ...]] [HAVING condition]\n"
         "    [UNION ALL select]"),
        "Print the tuples of a continuous query until it ends or Ctrl-C cancels it.",
        "SELECT RSTREAM * FROM src [RANGE 1 TUPLES];"),
    "EVAL": (
        "EVAL expression [ON map_expression]",
        "Evaluate an expression once (ON gives it an input tuple) and print the value.",
        'EVAL "Hello" || ", world!";'),
    "EXPLAIN": (
        "EXPLAIN {select | CREATE STREAM name AS select}",
        "Show how a SELECT or a stream would run, without running it.",
        "EXPLAIN SELECT RSTREAM * FROM src [RANGE 1 TUPLES];"),
    "DROP SOURCE": ("DROP SOURCE name", "Stop a source and remove it.", "DROP SOURCE src;"),
    "DROP STREAM": ("DROP STREAM name", "Stop a stream and remove it.", "DROP STREAM strm;"),
    "DROP SINK": ("DROP SINK name", "Close a sink and remove it.", "DROP SINK snk;"),
    "DROP STATE": ("DROP STATE name", "Remove a user-defined state.", "DROP STATE my_uds;"),
    "PAUSE SOURCE": ("PAUSE SOURCE name", "Stop a source emitting until RESUME SOURCE.", "PAUSE SOURCE src;"),
    "RESUME SOURCE": ("RESUME SOURCE name", "Let a paused source emit again.", "RESUME SOURCE src;"),
    "REWIND SOURCE": ("REWIND SOURCE name", "Emit a rewindable source's tuples from the beginning again.",
                      "REWIND SOURCE src;"),
    "UPDATE SOURCE": ("UPDATE SOURCE name SET param = value [, ...]",
                      "Change parameters of a running source.", "UPDATE SOURCE src SET interval = 0.5;"),
    "UPDATE SINK": ("UPDATE SINK name SET param = value [, ...]",
                    "Change parameters of a sink.", "UPDATE SINK snk SET flush = true;"),
    "UPDATE STATE": ("UPDATE STATE name SET param = value [, ...]",
                     "Change parameters of a user-defined state.", "UPDATE STATE my_uds SET threshold = 3;"),
    "SAVE STATE": ("SAVE STATE name [TAG tag]", "Save a user-defined state (tag 'default' if omitted).",
                   "SAVE STATE my_uds TAG trained;"),
    "LOAD STATE": (
        ("LOAD STATE name TYPE type_name [TAG tag] [SET param = value [, ...]]\n"
         "    [OR CREATE IF NOT SAVED [WITH param = value [, ...]]]"),
        "Load a state saved by SAVE STATE (or create it when it was never saved).",
        "LOAD STATE my_uds TYPE my_uds_type TAG trained OR CREATE IF NOT SAVED;"),
}

COMMANDS: dict[str, tuple[str, str]] = {
    "USE": ("USE topology", "Send the next statements to this topology."),
    "FILE": ("FILE path", "Run the statements of a BQL file."),
    "\\t": ("\\t [table | json]", "Switch SELECT and EVAL output between a table and JSON lines."),
    "HELP": ("help [statement]", "This list, or the synopsis of one statement."),
    "EXIT": ("exit", "Leave the shell (also Ctrl-D)."),
}


def topics() -> list[str]:
    """Every statement and shell command ``help`` knows."""
    return [*STATEMENTS, *COMMANDS]


def _overview() -> str:
    width = max(len(text) for text in [*STATEMENTS, *(synopsis for synopsis, _ in COMMANDS.values())]) + 2
    lines = ["BQL statements (end each with ';'; 'help <statement>' shows its synopsis):"]
    lines += [f"  {name:<{width}}{about}" for name, (_, about, _) in STATEMENTS.items()]
    lines += ["", "Shell commands:"]
    lines += [f"  {synopsis:<{width}}{about}" for synopsis, about in COMMANDS.values()]
    lines += ["", "Tab completes statements, keywords, functions and the topology's nodes;",
              "Ctrl-C cancels the running statement or drops the current input."]
    return "\n".join(lines)


def lookup(topic: str) -> list[str]:
    """The entries ``topic`` names: the one it spells (any case), else every one it is a prefix of
    (``help drop``: the four DROP statements)."""
    key = " ".join(topic.strip().rstrip(";").upper().split())
    by_key = {name.upper(): name for name in topics()}
    if key in by_key:
        return [by_key[key]]
    return [name for upper, name in by_key.items() if upper.startswith(key)]


def _entry(name: str) -> str:
    if name in COMMANDS:
        synopsis, about = COMMANDS[name]
        return f"{synopsis}\n\n{about}"
    synopsis, about, example = STATEMENTS[name]
    return f"{synopsis}\n\n{about}\n\nExample:\n  {example}"


def help_text(topic: str) -> str:
    """The help shown for ``help <topic>`` (``topic`` empty: the overview)."""
    if not topic.strip():
        return _overview()
    names = lookup(topic)
    if not names:
        return f"no help for '{topic.strip()}'\n\n" + _overview()
    return "\n\n".join(_entry(name) for name in names)
