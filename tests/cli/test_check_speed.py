"""``sbpy check`` and a rejected ``sbpy runfile`` never import Spark (each is a fresh process that
reports what it imported; the time is measured in the README, never asserted)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """\
import json, sys
from sbpy.server.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "spark": sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))}),
      file=sys.stderr)
"""


def probe(*argv: str, cwd: Path = ROOT) -> tuple[int, list[str], str]:
    """Exit code and Spark modules of ``sbpy ARGV`` in a new process, and what it printed."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120,
                          cwd=cwd, check=False)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], report["spark"], proc.stdout + proc.stderr


@pytest.mark.parametrize("argv,code", [
    (["check", "-c", "examples/sbml/sensorbee.yaml", "examples/sbml/train.bql"], 0),
    (["check", "examples/sbml/train.bql"], 1),  # without the config's plugins: unknown types and functions
])
def test_check_does_not_import_spark(argv, code):
    got, spark, _ = probe(*argv)
    assert (got, spark) == (code, [])


def test_runfile_rejects_an_unknown_name_before_spark_starts(tmp_path):
    (tmp_path / "bad.bql").write_text('CREATE PAUSED SOURCE s TYPE file WITH path = "in.jsonl";\n'
                                      "CREATE STREAM w AS SELECT RSTREAM nlp_splitt(text) AS t FROM s [RANGE 1 TUPLES];\n")
    (tmp_path / "sb.yaml").write_text("plugins: [sbpy.plugins.examples]\n")
    code, spark, out = probe("runfile", "-c", "sb.yaml", "bad.bql", cwd=tmp_path)
    assert (code, spark) == (1, [])
    assert "bad.bql:2:35: function 'nlp_splitt' is not registered (did you mean 'nlp_split'?)" in out
    assert "                                      ^~~~~~~~~~" in out
