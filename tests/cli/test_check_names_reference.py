"""Name resolution against its references: what the server reads (``select_inputs``), what the
conformance cases use (every accepted query and EVAL must resolve with the built-ins), and what the
conformance runner sends to ``sbpy check -`` (single statements for an existing topology)."""
from __future__ import annotations

import io
import sys

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sbpy.bql.analyzer.resolve import ScriptScope
from sbpy.bql.ast import FunctionCall
from sbpy.bql.parser import parse_script
from sbpy.plugins import PluginRegistries
from sbpy.server.cli.catalog import catalog_of, function_registry
from sbpy.server.cli.check import check_text
from sbpy.server.cli.main import main
from sbpy.server.nodes.stream_node import select_inputs
from conformance_compare import CASES as CASES_DIR

if not CASES_DIR.exists():  # pragma: no cover
    pytest.skip("conformance cases not available", allow_module_level=True)

REGISTRIES = PluginRegistries()  # built-ins only
FUNCTIONS = function_registry(REGISTRIES)
CATALOG = catalog_of(REGISTRIES, FUNCTIONS)
CASES = [(f"{path.parent.name}/{case['name']}", case)
         for path in sorted(CASES_DIR.glob("*/*.yaml")) for case in yaml.safe_load(path.read_text()) or []]


def runner_script(case: dict) -> str:
    """The statements the conformance runner sends for a stream case (FORMAT.md)."""
    inputs = list(case["inputs"])
    return "".join([
        *(f'CREATE PAUSED SOURCE {name} TYPE file WITH path = "{name}.jsonl";\n' for name in inputs),
        f"CREATE STREAM sbcheck_out AS {case['query'].strip().rstrip(';')};\n",
        'CREATE SINK sbcheck_sink TYPE file WITH path = "out.jsonl";\n',
        "INSERT INTO sbcheck_sink FROM sbcheck_out;\n",
        *(f"RESUME SOURCE {name};\n" for name in inputs),
    ])


STREAM_CASES = [(n, c) for n, c in CASES if "query" in c]
EVAL_CASES = [(n, c) for n, c in CASES if "eval" in c and not c.get("expect_error")]
ACCEPTED_STATEMENTS = [(n, c) for n, c in CASES if "statement" in c and not c.get("expect_error", True)]


@pytest.mark.parametrize("case", [c for _, c in STREAM_CASES], ids=[n for n, _ in STREAM_CASES])
def test_every_stream_case_resolves(case):
    errors = [f for f in check_text(runner_script(case), ScriptScope(CATALOG), FUNCTIONS) if not f.warning]
    assert errors == []


@pytest.mark.parametrize("case", [c for _, c in EVAL_CASES], ids=[n for n, _ in EVAL_CASES])
def test_every_accepted_eval_resolves(case):
    assert check_text(f"EVAL {case['eval']};", ScriptScope(CATALOG), FUNCTIONS) == []


def test_the_stream_cases_call_functions():
    """The stream cases are not vacuous for name resolution: they call many different functions."""
    calls = {n.name for _, c in STREAM_CASES for ps in parse_script(c["query"]) for n in ps.stmt.walk()
             if isinstance(n, FunctionCall)}
    assert len(calls) >= 10


@pytest.mark.parametrize("case", [c for _, c in ACCEPTED_STATEMENTS], ids=[n for n, _ in ACCEPTED_STATEMENTS])
def test_an_accepted_statement_on_stdin_passes(monkeypatch, capsys, case):
    """The runner checks single statements meant for an existing topology with ``sbpy check -``."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(case["statement"].strip().rstrip(";") + ";\n"))
    assert main(["check", "-"]) == 0, capsys.readouterr().out


# ---------------------------------------------------------------- FROM inputs vs the server's rule

NAMES = st.sampled_from(["a", "b", "src", "s_2", "Mixed"])


@st.composite
def from_item(draw) -> str:
    name = draw(NAMES)
    kind = draw(st.sampled_from(["ref", "udsf", "udsf_int", "udsf_two", "tumble", "match"]))
    window = " [RANGE 2 TUPLES]"
    if kind == "ref":
        return name + window
    if kind == "udsf":
        return f'duplicate("{name}", 2){window}'
    if kind == "udsf_int":
        return f"sequence(3){window}"
    if kind == "udsf_two":
        return f'duplicate(1, "{name}", "{draw(NAMES)}"){window}'
    if kind == "tumble":
        return f"tumble({name}, 1 SECONDS)"
    return f"{name}{window} MATCH_RECOGNIZE ( ORDER BY ts MEASURES A.x AS x PATTERN (A) DEFINE A AS x > 1 )"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(from_item(), min_size=1, max_size=3), min_size=1, max_size=3))
def test_the_streams_read_are_those_the_server_reads(branches):
    """With nothing defined, every stream a SELECT reads is reported once per use: the set of names
    reported equals the server's ``select_inputs`` (the reference of what a query reads)."""
    text = " UNION ALL ".join(f"SELECT RSTREAM * FROM {', '.join(items)}" for items in branches) + ";"
    (ps,) = parse_script(text)
    problems = ScriptScope(CATALOG).resolve(ps, text)
    reported = {p.message.split("'")[1] for p in problems if p.message.endswith("was not found")}
    assert reported == set(select_inputs(ps.stmt))
    assert all(p.message.startswith("stream '") for p in problems)
    for p in problems:  # the caret points at the name (a UDSF's argument: at its opening quote)
        name = p.message.split("'")[1]
        assert text[p.offset : p.offset + p.length].strip('"').lower() == name
