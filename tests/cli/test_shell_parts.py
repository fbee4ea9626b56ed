"""The pieces of ``sbpy shell``: completer, lexer, rendering (table/JSON, errors, acknowledgements),
help, and the Shell's reaction to Ctrl-C, ``\\t`` and successful statements (no server: a client
stand-in answers)."""
from __future__ import annotations

import io

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from pygments.token import Comment, Error, Keyword, Name, Number, Punctuation, String
from sbpy.bql.analyzer.reserved import RESERVED_WORDS
from sbpy.server.cli.client import QueryResult, RequestFailed
from sbpy.server.cli.shell import Shell
from sbpy.server.cli.shell_completer import BqlCompleter, ShellNames
from sbpy.server.cli.shell_help import STATEMENTS, help_text, lookup
from sbpy.server.cli.shell_lexer import BqlLexer, grammar_keywords
from sbpy.server.cli.shell_render import MAX_WIDTH, Renderer, TableWriter, acknowledgement, error_lines

NAMES = ShellNames(sources=("src", "sensor"), streams=("words", "wc"), sinks=("snk",), states={"model"},
                   topologies=("t", "wordcount"), functions=("abs", "count", "str"), udsfs=("duplicate",),
                   types={"SOURCE": ("file", "node_statuses"), "SINK": ("file", "stdout"), "STATE": ("uds",)})


def complete(text: str, pending: str = "") -> list[tuple[str, str]]:
    completer = BqlCompleter(NAMES, lambda: pending)
    found = completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
    return [(c.text, c.display_meta_text) for c in found]


# -- completer

def test_completes_stream_and_source_names_after_from():
    assert complete("SELECT RSTREAM * FROM w") == [("words", "stream"), ("wc", "stream")]
    assert complete("select rstream * from s") == [("src", "source"), ("sensor", "source")]
    assert ("duplicate", "udsf") in complete("SELECT RSTREAM * FROM ")


def test_completes_after_a_comma_in_from_only():
    assert complete("SELECT RSTREAM * FROM src [RANGE 1 TUPLES], w") == [("words", "stream"), ("wc", "stream")]
    assert ("words", "stream") in complete("SELECT RSTREAM a, w")
    assert ("where", "keyword") in complete("SELECT RSTREAM a, w")


def test_completes_node_kinds_by_statement():
    assert complete("DROP SINK ") == [("snk", "sink")]
    assert complete("RESUME SOURCE se") == [("sensor", "source")]
    assert complete("SAVE STATE ") == [("model", "state")]
    assert complete("INSERT INTO s") == [("snk", "sink")]
    assert complete("CREATE SOURCE ") == []  # a new name
    assert complete("CREATE PAUSED SOURCE s TYPE ") == [("file", "source type"), ("node_statuses", "source type")]
    assert complete("CREATE SINK k TYPE st") == [("stdout", "sink type")]


def test_statement_openers_and_commands_at_the_start():
    assert complete("cr") == [("create source", "statement"), ("create paused source", "statement"),
                              ("create stream", "statement"), ("create sink", "statement"),
                              ("create state", "statement")]
    assert ("USE", "command") in complete("")
    assert complete("USE w") == [("wordcount", "topology")]
    assert complete("help ins") == [("INSERT INTO", "help")]
    assert complete("\\t t") == [("table", "format")]


def test_continues_a_statement_of_earlier_lines():
    assert complete("  w", pending="CREATE STREAM x AS SELECT RSTREAM * FROM\n") == \
        [("words", "stream"), ("wc", "stream")]
    assert complete("DR", pending="EVAL 1;\n")[0] == ("DROP SOURCE", "statement")


def test_keyword_case_follows_the_word():
    assert ("RSTREAM", "keyword") in complete("SELECT RS")
    assert ("rstream", "keyword") in complete("SELECT rs")
    assert ("count", "function") in complete("SELECT RSTREAM co")


def test_states_follow_the_session_statements():
    names = ShellNames()
    names.note_statement("CREATE STATE m1 TYPE uds;")
    names.note_statement("load state m2 TYPE uds OR CREATE IF NOT SAVED;")
    names.note_statement("DROP STATE m1;")
    assert names.states == {"m2"}


def test_fetch_nodes_from_a_server(server):
    from sbpy.server.cli.client import ApiClient

    with ApiClient(server.url) as client:
        client.create_topology("t")
        client.queries("t", "CREATE SOURCE src TYPE node_statuses; CREATE STREAM s1 AS "
                            "SELECT RSTREAM * FROM src [RANGE 1 TUPLES]; CREATE SINK k TYPE stdout;")
        names = ShellNames()
        names.refresh(client, "t").join()
    assert (names.sources, names.streams, names.sinks, names.topologies) == (("src",), ("s1",), ("k",), ("t",))


# -- lexer

def tokens(text: str) -> list[tuple[object, str]]:
    return [(t, v) for t, v in BqlLexer().get_tokens(text) if v.strip()]


def test_lexer_classifies_words():
    assert tokens('SELECT RSTREAM count(x), "a""b", 2.5 FROM src [RANGE 1 TUPLES] -- c') == [
        (Keyword, "SELECT"), (Keyword, "RSTREAM"), (Name.Function, "count"), (Punctuation, "("),
        (Name, "x"), (Punctuation, ")"), (Punctuation, ","), (String.Double, '"a""b"'), (Punctuation, ","),
        (Number.Float, "2.5"), (Keyword, "FROM"), (Name, "src"), (Punctuation, "["), (Keyword, "RANGE"),
        (Number.Integer, "1"), (Keyword, "TUPLES"), (Punctuation, "]"), (Comment.Single, "-- c")]
    assert tokens("eval null")[1] == (Keyword.Constant, "null")
    assert tokens("SELECT value")[1] == (Keyword.Reserved, "value")  # reserved, not a grammar keyword


def test_grammar_keywords_come_from_the_grammar():
    assert {"select", "rstream", "tuples", "match_recognize", "paused"} <= grammar_keywords()
    assert "value" not in grammar_keywords() and "value" in RESERVED_WORDS


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
def test_lexer_keeps_every_character(text):
    lexer = BqlLexer(stripnl=False, stripall=False, ensurenl=False)  # as prompt_toolkit's PygmentsLexer
    lexed = list(lexer.get_tokens(text))
    assert "".join(v for _, v in lexed) == text.replace("\r\n", "\n").replace("\r", "\n")
    assert all(t is not Error for t, _ in lexed)


# -- rendering

def test_table_streams_and_widens():
    out = io.StringIO()
    table = TableWriter(out)
    table.row({"name": "a", "n": 2})
    table.row({"name": "a longer one", "n": 2.0})
    table.row({"x": None})
    assert out.getvalue().splitlines() == [
        "name | n", "-----+--", "a    | 2",
        "name         | n", "-------------+----", "a longer one | 2.0",
        "x", "----", "null"]


def test_table_cuts_long_values():
    out = io.StringIO()
    TableWriter(out).row({"s": "x" * (MAX_WIDTH + 5)})
    assert out.getvalue().splitlines()[-1] == "x" * (MAX_WIDTH - 1) + "…"


@given(st.lists(st.dictionaries(st.sampled_from("abc"), st.one_of(st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False, allow_infinity=False),
                                                                   st.text(max_size=5), st.none())), max_size=6))
def test_json_format_is_the_rows_exactly(rows):
    out = io.StringIO()
    renderer = Renderer(out, io.StringIO(), "json")
    for row in rows:
        renderer.row(row)
    assert [orjson.loads(line) for line in out.getvalue().split("\n")[:-1]] == rows
    assert out.getvalue() == "".join(orjson.dumps(r).decode() + "\n" for r in rows)


def test_eval_value_in_table_format():
    out = io.StringIO()
    renderer = Renderer(out, io.StringIO(), "table")
    renderer.value({"a": 1})
    renderer.value(2.0)
    assert out.getvalue().splitlines() == ["a", "-", "1", "2.0"]


def test_error_lines_are_sensorbee_messages():
    assert error_lines(RequestFailed("E0002", "The request is invalid", {"name": ["already taken"]})) == [
        "request failed: E0002: The request is invalid", "name: already taken"]
    assert error_lines(RequestFailed("", "cannot reach the server")) == ["request failed: cannot reach the server"]
    err = RequestFailed("E0007", "Cannot process a statement", {"error": "boom", "snippet": ["EVAL x;", "^"]})
    assert error_lines(err) == ["request failed: E0007: Cannot process a statement: boom", "EVAL x;", "^"]


@pytest.mark.parametrize("statement, ack", [
    ('CREATE PAUSED SOURCE src TYPE file WITH path = "a";', "CREATE SOURCE src"),
    ("create stream s as select rstream * from src [range 1 tuples];", "CREATE STREAM s"),
    ("INSERT INTO snk FROM s;", "INSERT INTO snk"),
    ("-- note\nRESUME SOURCE src;", "RESUME SOURCE src"),
    ("SAVE STATE m TAG t;", "SAVE STATE m"),
])
def test_acknowledgement(statement, ack):
    assert acknowledgement(statement) == ack


# -- help

def test_help_entries():
    assert lookup("create source;") == ["CREATE SOURCE"]
    assert lookup("drop") == ["DROP SOURCE", "DROP STREAM", "DROP SINK", "DROP STATE"]
    assert help_text("insert into").startswith("INSERT INTO sink FROM stream\n")
    assert all(name in help_text("") for name in STATEMENTS)
    assert help_text("nope").startswith("no help for 'nope'\n")


# -- the Shell with a client stand-in

class FakeClient:
    """Answers ``queries`` from a list of prepared results or exceptions."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.closed = []

    def queries(self, topology, text):
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def list_topologies(self):
        return []

    def request(self, method, path, body=None):
        return {path.rsplit("/", 1)[1]: []}


def interrupted_rows(n):
    yield from ({"i": i} for i in range(n))
    raise KeyboardInterrupt


def shell_with(*answers, live=False, fmt="json"):
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(FakeClient(*answers), "t", out, err, fmt)
    shell.live = live
    return shell, out, err


def test_ctrl_c_during_select_keeps_the_rows_and_the_shell():
    shell, out, err = shell_with(QueryResult("select", rows=interrupted_rows(2)), QueryResult("eval", value=1))
    shell.run_lines(iter(["SELECT RSTREAM * FROM s [RANGE 1 TUPLES];\n", "EVAL 1;\n"]))
    assert out.getvalue() == '{"i":0}\n{"i":1}\n1\n'
    assert err.getvalue() == "cancelled after 2 rows\n" and not shell.failed


def test_ctrl_c_before_the_answer():
    shell, out, err = shell_with(KeyboardInterrupt(), QueryResult("eval", value=2))
    shell.run_lines(iter(["SELECT RSTREAM * FROM s [RANGE 1 TUPLES];\n", "EVAL 2;\n"]))
    assert (out.getvalue(), err.getvalue(), shell.failed) == ("2\n", "cancelled\n", False)


def test_acknowledgement_goes_to_stdout_when_live():
    body = {"queries": [{"statement": "CREATE SINK k TYPE stdout"}, {"statement": "CREATE STATE m TYPE uds"}]}
    shell, out, err = shell_with(QueryResult("statements", body=body), live=True)
    shell.statement("CREATE SINK k TYPE stdout; CREATE STATE m TYPE uds;")
    assert (out.getvalue(), err.getvalue()) == ("CREATE SINK k\nCREATE STATE m\n", "")
    assert shell.names.states == {"m"}
    shell, out, err = shell_with(QueryResult("statements", body=body), live=False)
    shell.statement("CREATE SINK k TYPE stdout; CREATE STATE m TYPE uds;")
    assert (out.getvalue(), err.getvalue()) == ("", "CREATE SINK k\nCREATE STATE m\n")


def test_format_switch():
    rows = [{"a": 1}, {"a": 22}]
    shell, out, err = shell_with(QueryResult("select", rows=iter(rows)), QueryResult("select", rows=iter(rows)))
    shell.run_lines(iter(["\\t\n", "SELECT RSTREAM * FROM s [RANGE 1 TUPLES];\n", "\\t json\n",
                          "SELECT RSTREAM * FROM s [RANGE 1 TUPLES];\n", "\\t xml\n"]))
    assert out.getvalue().splitlines() == ["a", "-", "1", "a", "--", "22", '{"a":1}', '{"a":22}']
    assert err.getvalue().splitlines() == ["output format: table", "output format: json",
                                           "unknown output format 'xml': use \\t table or \\t json"]
    assert shell.failed


def test_help_command_prints_to_stdout():
    shell, out, _ = shell_with()
    shell.run_lines(iter(["help save\n"]))
    assert out.getvalue() == help_text("save") + "\n"
