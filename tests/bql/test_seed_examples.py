"""Every example query of the seeds (000-002 MATCH_RECOGNIZE, 003 Timeplus) is accepted and runs.

Each file of ``tests/fixtures/seed_examples`` holds one example (see the README there): ``sbpy check``
(``server/cli/check.py``, the command's own ``main``) must accept the file, and the example — every
SELECT of the file — runs in process over the file's ``-- input`` rows (a MATCH_RECOGNIZE example with
the backtracking matcher and with the automaton); where the file gives
``-- output`` rows (the seed's result table, or computed by hand as the file says) the outputs must be
exactly those, in order, and the rows dropped exactly those of its ``-- dropped`` lines (none unless
given). A ``table(s)`` query reads the input rows as the stream's history. A file marked ``-- expect: error MESSAGE`` is an example the seed itself calls
invalid: the check must report MESSAGE. A file marked ``-- expect: pending OWNER`` belongs to another
piece of work and is a strict expected failure, so it fails the day that work makes it pass.
"""
from __future__ import annotations

import argparse
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sbpy.bql.ast import HistoryTable, Select, SelectUnion
from sbpy.bql.parser import parse_script
from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.history import bind_tables
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import (
    CLOCK_START,
    RunResult,
    json_ready,
    parse_select,
    run_query_detailed,
    to_timestamp,
)
from sbpy.server.cli import check

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "seed_examples"


@dataclass
class Example:
    """A fixture file read: its text, directives and the rows it feeds and expects."""

    path: Path
    text: str
    inputs: dict[str, list[dict]] = field(default_factory=dict)
    outputs: list | None = None
    timestamp: str | None = None
    pending: str | None = None
    error: str | None = None
    dropped: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, path: Path) -> Example:
        ex = cls(path, path.read_text(encoding="utf-8"))
        for line in ex.text.splitlines():
            if not line.startswith("-- "):
                continue
            head, _, rest = line[3:].partition(":")
            rest = rest.strip()
            if head.startswith("input "):
                ex.inputs.setdefault(head[len("input "):].strip().lower(), []).append(json.loads(rest))
            elif head == "output":
                ex.outputs = (ex.outputs or []) + [json.loads(rest)]
            elif head == "dropped":
                ex.dropped.append(rest)
            elif head == "timestamp":
                ex.timestamp = rest
            elif head == "expect" and rest.startswith("pending "):
                ex.pending = rest[len("pending "):]
            elif head == "expect" and rest.startswith("error "):
                ex.error = rest[len("error "):]
        return ex

    def queries(self) -> list[str]:
        """The text of every SELECT of the file (the preamble's CREATE statements left out)."""
        return [ps.text for ps in parse_script(self.text) if isinstance(ps.stmt, (Select, SelectUnion))]


def run(query: str, ex: Example) -> RunResult:
    """The example's run over its input rows. A query of ``table(s)`` reads them as the history of ``s``
    (the rows the stream holds when the query starts) and runs once; any other query reads them live."""
    stmt = parse_select(query)
    tables = [f for f in getattr(stmt, "from_items", ()) if isinstance(f, HistoryTable)]
    if not tables:
        return run_query_detailed(query, ex.inputs, timestamp_field=ex.timestamp)

    def history(name: str) -> list[Tuple]:
        return [Tuple(dict(row), to_timestamp(row[ex.timestamp]) if ex.timestamp else CLOCK_START, seq, name)
                for seq, row in enumerate(ex.inputs.get(name.lower(), []), start=1)]

    processor = build_processor(bind_tables(stmt, history))
    result = RunResult()
    step = processor.run()
    result.outputs = [json_ready(t.data) for t in step.outputs]
    result.dropped = list(step.dropped)
    return result


def _params():
    """(path, engine) per fixture; a MATCH_RECOGNIZE seed's example runs with each pattern engine."""
    for path in sorted(FIXTURES.glob("*.bql")):
        ex = Example.read(path)
        marks = [pytest.mark.xfail(strict=True, reason=f"pending: {ex.pending}")] if ex.pending else []
        engines = ("matcher", "automaton") if path.name[:3] in ("000", "001", "002") else (None,)
        for engine in engines:
            yield pytest.param(path, engine, marks=marks, id=path.stem + (f"-{engine}" if engine else ""))


def sbpy_check(path: Path) -> tuple[int, str]:
    """``sbpy check PATH``: exit code and output."""
    out = io.StringIO()
    return check.main(argparse.Namespace(file=str(path)), stdin=io.StringIO(""), stdout=out), out.getvalue()


@pytest.mark.parametrize("path,engine", list(_params()))
def test_seed_example_is_accepted_and_runs(path, engine, monkeypatch):
    if engine is not None:  # as tests/bql/runtime/conftest.py runs every MATCH_RECOGNIZE test
        monkeypatch.setenv("SBPY_MATCH_ENGINE", engine)
    ex = Example.read(path)
    rc, out = sbpy_check(path)
    if ex.error is not None:
        assert rc == 1 and ex.error in out, out
        return
    assert rc == 0, out
    queries = ex.queries()
    assert queries, "the fixture has no SELECT"
    for query in queries:
        result = run(query, ex)
        assert [d.error for d in result.dropped] == ex.dropped, query
        if ex.outputs is not None:
            assert len(queries) == 1, "expected rows are given for a file of one SELECT"
            assert result.outputs == ex.outputs


def test_every_seed_has_examples():
    names = [p.name for p in FIXTURES.glob("*.bql")]
    for seed in ("000", "001", "002", "003"):
        assert sum(n.startswith(seed + "_") for n in names) >= 2, seed


def test_fixture_directives_are_read():
    ex = Example.read(FIXTURES / "002_12_after_match_last.bql")
    assert len(ex.inputs["ticker"]) == 7 and ex.timestamp is None and ex.pending is None
    assert ex.outputs[0] == {"symbol": "XYZ", "sumPrice": 26, "startTime": 1537178401, "endTime": 1537178404}
    assert len(ex.outputs) == 3 and len(ex.dropped) == 1
    assert len(ex.queries()) == 1
    assert Example.read(FIXTURES / "002_12_after_match_first.bql").error.startswith("AFTER MATCH SKIP TO FIRST A")
