"""``sbpy check``: positions in the whole file, recovery after syntax errors, stdin, exit codes."""
from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

from sbpy.server.cli import check

SCRIPT = """\
CREATE SOURCE src TYPE file WITH path = "in.jsonl";
CREATE SINK 1snk TYPE stdout;
-- a comment; with a semicolon
SELECT RSTREAM a
  FROM src;
EVAL "1" || 2;
CREATE SINK fsnk TYPE file WITH path = "out.jsonl", truncate = 1;
SELECT RSTREAM * FROM src MATCH_RECOGNIZE ( ORDER BY ts MEASURES count(*) AS n PATTERN (A B*) DEFINE A AS a > 1 );
SELECT RSTREAM 1 / 0 AS x FROM src [RANGE 1 TUPLES] WHERE 6;
"""


def run_check(path: str, stdin_text: str = "") -> tuple[int, list[str]]:
    out = io.StringIO()
    rc = check.main(argparse.Namespace(file=path), stdin=io.StringIO(stdin_text), stdout=out)
    return rc, [x for x in out.getvalue().splitlines() if not x.startswith("    ")]  # without the snippets


def test_file_reports_every_problem_with_file_positions(tmp_path: Path) -> None:
    f = tmp_path / "topo.bql"
    f.write_text(SCRIPT)
    rc, lines = run_check(str(f))
    assert rc == 1
    assert lines == [
        f"{f}:2:13: syntax error: unexpected number '1', expected an identifier",
        f"{f}:5:8: stream 'src' needs a window such as [RANGE 1 TUPLES] (or an EMIT clause for a global aggregation)",
        f"{f}:6:1: cannot apply '||' to 'string' and 'int'",
        f"{f}:7:53: parameter 'truncate' of sink type 'file' must be a bool, not int",
        f"{f}:8:91: warning: pattern variable 'B' matches every row and its quantifier is unbounded:"
        " a match can keep state forever (add WITHIN or bound the quantifier)",
    ]


def test_stdin_clean_script_exits_zero() -> None:
    rc, lines = run_check("-", "CREATE STREAM s AS SELECT RSTREAM a FROM src [RANGE 1 TUPLES];\nEVAL 1 + 2;")
    assert (rc, lines) == (0, [])


def test_stdin_prints_as_stdin_name() -> None:
    rc, lines = run_check("-", "\n\nSELECT RSTREAM * FROM src [RANGE 0 TUPLES]")
    assert rc == 1
    assert lines == ["<stdin>:3:27: the range of a window must be positive: 0 tuples"]


def test_warnings_alone_exit_zero() -> None:
    rc, lines = run_check(
        "-", "SELECT RSTREAM * FROM src MATCH_RECOGNIZE ( ORDER BY ts MEASURES count(*) AS n PATTERN (A+ B) DEFINE B AS b > 1 )")
    assert rc == 0 and len(lines) == 1 and ": warning: " in lines[0]


def test_syntax_error_at_end_without_semicolon() -> None:
    rc, lines = run_check("-", "EVAL 1;\nEVAL 2 +")
    assert rc == 1 and lines[0].startswith("<stdin>:2:") and "syntax error" in lines[0]


def test_missing_file_exits_two(tmp_path: Path) -> None:
    rc, _ = run_check(str(tmp_path / "nope.bql"))
    assert rc == 2


def test_register_adds_the_subcommand() -> None:
    parser = argparse.ArgumentParser()
    check.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["check"])
    assert args.file == "-" and args.func is check.main


def test_console_script_reads_stdin() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sbpy.server.cli.main", "check", "-"],
        input="SELECT RSTREAM a FROM src [RANGE 1 TUPLES] GROUP BY a + 1;", capture_output=True, text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "<stdin>:1:53: grouping by expressions is not supported yet",
        "    SELECT RSTREAM a FROM src [RANGE 1 TUPLES] GROUP BY a + 1;",
        "                                                        ^",
    ]
