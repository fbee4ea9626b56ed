"""``sbpy check`` resolves names across a file: each unknown or clashing name is an error with its
line, column, a caret snippet and a "did you mean"; statement order matters (create before use, DROP
removes); stdin is resolved only when asked."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from sbpy.server.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SBML_CONFIG = str(ROOT / "examples" / "sbml" / "sensorbee.yaml")  # plugins: sbpy.plugins.examples

SRC = 'CREATE SOURCE src TYPE file WITH path = "in.jsonl";\n'


def check(tmp_path: Path, capsys, script: str, *flags: str) -> tuple[int, list[str], list[str]]:
    """Exit code, the ``LINE:COL: message`` heads and every output line of ``sbpy check FILE``."""
    f = tmp_path / "t.bql"
    f.write_text(script)
    code = main(["check", *flags, str(f)])
    out = capsys.readouterr().out.splitlines()
    heads = [x.removeprefix(f"{f}:") for x in out if x.startswith(f"{f}:")]
    return code, heads, out


UNKNOWN = [
    ("function", SRC + "SELECT RSTREAM abss(a) AS x FROM src [RANGE 1 TUPLES];",
     "2:16: function 'abss' is not registered (did you mean 'abs'?)"),
    ("function in EVAL", "EVAL uper(\"ab\");", "1:6: function 'uper' is not registered (did you mean 'upper'?)"),
    ("function in WITH", 'CREATE SOURCE s TYPE file WITH path = concatt("a", "b");',
     "1:39: function 'concatt' is not registered (did you mean 'concat'?)"),
    ("UDSF", SRC + "SELECT RSTREAM * FROM duplicat(\"src\", 2) [RANGE 1 TUPLES];",
     "2:23: UDSF 'duplicat' is not registered (did you mean 'duplicate'?)"),
    ("source type", 'CREATE SOURCE s TYPE fiel WITH path = "x";',
     "1:22: source type 'fiel' is not registered (did you mean 'file'?)"),
    ("sink type", "CREATE SINK k TYPE stdot;", "1:20: sink type 'stdot' is not registered (did you mean 'stdout'?)"),
    ("state type", "CREATE STATE st TYPE my_countr;", "1:22: state type 'my_countr' is not registered (did you mean 'my_counter'?)"),
    ("LOAD STATE type", "LOAD STATE st TYPE nope;", "1:20: state type 'nope' is not registered"),
    ("stream in FROM", SRC + "SELECT RSTREAM * FROM scr [RANGE 1 TUPLES];",
     "2:23: stream 'scr' was not found (did you mean 'src'?)"),
    ("stream in a UNION branch", SRC + "SELECT RSTREAM * FROM src [RANGE 1 TUPLES] UNION ALL\n"
     "  SELECT RSTREAM * FROM other [RANGE 1 TUPLES];", "3:25: stream 'other' was not found"),
    ("UDSF input", SRC + 'SELECT RSTREAM * FROM duplicate("sr", 2) [RANGE 1 TUPLES];',
     "2:33: stream 'sr' was not found (did you mean 'src'?)"),
    ("window function input", SRC + "SELECT RSTREAM count(*) AS n, window_start FROM tumble(srcs, 1 SECONDS)"
     " GROUP BY window_start;", "2:56: stream 'srcs' was not found (did you mean 'src'?)"),
    ("MATCH_RECOGNIZE input", SRC + "SELECT RSTREAM * FROM sc MATCH_RECOGNIZE ( ORDER BY ts MEASURES A.a AS a"
     " PATTERN (A) DEFINE A AS a > 1 );", "2:23: stream 'sc' was not found (did you mean 'src'?)"),
    ("INSERT INTO sink", SRC + "CREATE SINK snk TYPE stdout;\nINSERT INTO sink1 FROM src;",
     "3:13: sink 'sink1' was not found (did you mean 'snk'?)"),
    ("INSERT FROM stream", SRC + "CREATE SINK snk TYPE stdout;\nINSERT INTO snk FROM srd;",
     "3:22: stream 'srd' was not found (did you mean 'src'?)"),
    ("INSERT INTO a stream", SRC + "CREATE STREAM s AS SELECT RSTREAM * FROM src [RANGE 1 TUPLES];\n"
     "INSERT INTO s FROM src;", "3:13: sink 's' was not found ('s' is a stream)"),
    ("DROP", SRC + "DROP STREAM src;", "2:13: stream 'src' was not found ('src' is a source)"),
    ("DROP STATE", "DROP STATE st;", "1:12: state 'st' was not found"),
    ("PAUSE", SRC + "PAUSE SOURCE srx;", "2:14: source 'srx' was not found (did you mean 'src'?)"),
    ("RESUME", "RESUME SOURCE src;", "1:15: source 'src' was not found"),
    ("REWIND", "REWIND SOURCE src;", "1:15: source 'src' was not found"),
    ("UPDATE", "UPDATE SINK k SET x = 1;", "1:13: sink 'k' was not found"),
    ("SAVE STATE", "SAVE STATE m TAG t1;", "1:12: state 'm' was not found"),
    ("uds sink's state", 'CREATE SINK k TYPE uds WITH name = "model";', "1:36: state 'model' was not found"),
    ("read a sink", "CREATE SINK k TYPE stdout;\nSELECT RSTREAM * FROM k [RANGE 1 TUPLES];",
     "2:23: 'k' is a sink and cannot be read from"),
    ("read itself", "CREATE STREAM s AS SELECT RSTREAM * FROM s [RANGE 1 TUPLES];",
     "1:42: stream 's' cannot read from itself"),
    ("duplicate node", SRC + "CREATE SINK src TYPE stdout;", "2:13: source 'src' already exists"),
    ("duplicate state", "CREATE STATE a TYPE my_counter;\nCREATE STATE a TYPE my_counter;",
     "2:14: state 'a' already exists"),
    ("used before created", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES];\n" + SRC,
     "1:23: stream 'src' was not found"),
    ("used after DROP", SRC + "DROP SOURCE src;\nSELECT RSTREAM * FROM src [RANGE 1 TUPLES];",
     "3:23: stream 'src' was not found"),
    ("EXPLAIN", "EXPLAIN SELECT RSTREAM * FROM nowhere [RANGE 1 TUPLES];", "1:31: stream 'nowhere' was not found"),
    ("EXPLAIN CREATE STREAM", "EXPLAIN CREATE STREAM s AS SELECT RSTREAM * FROM nowhere [RANGE 1 TUPLES];",
     "1:50: stream 'nowhere' was not found"),
    ("EXPLAIN creates nothing", SRC + "EXPLAIN CREATE STREAM s AS SELECT RSTREAM * FROM src [RANGE 1 TUPLES];\n"
     "DROP STREAM s;", "3:13: stream 's' was not found"),
]


@pytest.mark.parametrize("script,expected", [(s, e) for _, s, e in UNKNOWN], ids=[k for k, _, _ in UNKNOWN])
def test_each_unknown_name_is_an_error(tmp_path, capsys, script, expected):
    code, heads, _ = check(tmp_path, capsys, script, "-c", SBML_CONFIG)
    assert code == 1
    assert heads == [expected]


def test_the_error_shows_the_line_with_a_caret_under_the_name(tmp_path, capsys):
    code, _, out = check(tmp_path, capsys, SRC + "CREATE STREAM s AS\n  SELECT RSTREAM nlp_splt(a) AS x FROM src [RANGE 1 TUPLES];",
                         "-c", SBML_CONFIG)
    assert code == 1
    assert out[1:] == [
        "      SELECT RSTREAM nlp_splt(a) AS x FROM src [RANGE 1 TUPLES];",
        "                     ^~~~~~~~",
    ]
    assert out[0].endswith(":3:18: function 'nlp_splt' is not registered (did you mean 'nlp_split'?)")


def test_every_problem_of_a_file_is_reported_in_file_order(tmp_path, capsys):
    script = ('CREATE SOURCE s TYPE fil WITH path = "x";\n'
              "CREATE STREAM a AS SELECT RSTREAM foo(x) AS y FROM s [RANGE 1 TUPLES];\n"
              "CREATE SINK o TYPE stdout;\nINSERT INTO o FROM b;\nINSERT INTO o FROM a;\n")
    code, heads, _ = check(tmp_path, capsys, script)
    assert code == 1
    assert heads == [
        "1:22: source type 'fil' is not registered (did you mean 'file'?)",
        "2:35: function 'foo' is not registered (did you mean 'floor'?)",
        "4:20: stream 'b' was not found",
    ]


def test_plugin_names_need_the_config(tmp_path, capsys):
    script = ("CREATE STATE c TYPE my_counter;\n"
              "SELECT RSTREAM my_next_count(\"c\") AS n, my_inc(1) AS i FROM tick [RANGE 1 TUPLES];\n")
    script = 'CREATE SOURCE tick TYPE ticker WITH interval = 1;\n' + script
    code, heads, _ = check(tmp_path, capsys, script, "--config", SBML_CONFIG)
    assert (code, heads) == (0, [])
    code, heads, _ = check(tmp_path, capsys, script.replace('"c"', '"d"'), "--config", SBML_CONFIG)
    assert (code, heads) == (1, ["3:30: state 'd' was not found"])


def test_plugin_functions_in_eval_resolve_but_are_not_run(tmp_path, capsys):
    code, heads, _ = check(tmp_path, capsys, 'CREATE STATE c TYPE my_counter;\nEVAL my_next_count("c");',
                           "-c", SBML_CONFIG)
    assert (code, heads) == (0, [])


def sbpy_check(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``sbpy check`` in a new process (the plugins an earlier test loaded are not registered there)."""
    import os

    return subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "check", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def test_config_from_the_environment(tmp_path):
    f = tmp_path / "t.bql"
    f.write_text("CREATE STATE m TYPE jubaclassifier_arow WITH label_field = \"l\";")
    assert sbpy_check(str(f), env={"SENSORBEE_CONFIG": SBML_CONFIG}).returncode == 0
    assert sbpy_check(str(f), env={"SENSORBEE_CONFIG": ""}).returncode == 1


def test_a_config_that_cannot_be_loaded_exits_2(tmp_path, capsys):
    (tmp_path / "sb.yaml").write_text("plugins: [no_such_plugin_module_h4]\n")
    (tmp_path / "t.bql").write_text("EVAL 1;")
    assert main(["check", "-c", str(tmp_path / "sb.yaml"), str(tmp_path / "t.bql")]) == 2
    assert "cannot load plugin 'no_such_plugin_module_h4'" in capsys.readouterr().err


def test_a_statement_with_a_syntax_error_still_defines_its_name(tmp_path, capsys):
    script = (SRC + "CREATE STREAM s AS SELECT RSTREAM a FROM src [RANGE 1 TUPLES] WHERE;\n"
              "CREATE SINK k TYPE stdout;\nINSERT INTO k FROM s;\n")
    code, heads, _ = check(tmp_path, capsys, script)
    assert code == 1
    assert len(heads) == 1 and heads[0].startswith("2:") and "syntax error" in heads[0]


def test_load_state_defines_and_checks_the_type(tmp_path, capsys):
    ok = ('LOAD STATE m TYPE jubaclassifier_arow OR CREATE IF NOT SAVED WITH label_field = "l";\n'
          'CREATE SINK t TYPE uds WITH name = "m";\nSAVE STATE m;\nDROP STATE m;\n')
    assert check(tmp_path, capsys, ok, "-c", SBML_CONFIG)[:2] == (0, [])
    clash = "CREATE STATE m TYPE my_counter;\nLOAD STATE m TYPE jubaclassifier_arow;"
    assert check(tmp_path, capsys, clash, "-c", SBML_CONFIG)[:2] == (
        1, ["2:19: state 'm' has type 'my_counter', not 'jubaclassifier_arow'"])


def test_stdin_is_resolved_only_when_asked(monkeypatch, capsys):
    text = "SELECT RSTREAM * FROM src [RANGE 1 TUPLES];"
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["check", "-"]) == 0
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["check", "--resolve", "-"]) == 1
    assert capsys.readouterr().out.startswith("<stdin>:1:23: stream 'src' was not found")


def test_no_resolve_checks_a_file_as_before(tmp_path, capsys):
    code, heads, _ = check(tmp_path, capsys, "SELECT RSTREAM * FROM src [RANGE 1 TUPLES];", "--no-resolve")
    assert (code, heads) == (0, [])


@pytest.mark.parametrize("config,bql", [
    ("examples/sbml/sensorbee.yaml", "examples/sbml/train.bql"),
    ("examples/sbml/sensorbee.yaml", "examples/sbml/classify.bql"),
    ("examples/wordcount/sensorbee.yaml", "plugins/examples/data/wordcount.bql"),
    ("examples/sbml/sensorbee.yaml", "plugins/examples/data/train.bql"),
    ("examples/sbml/sensorbee.yaml", "plugins/examples/data/classify.bql"),
])
def test_the_tutorial_files_pass(capsys, config, bql):
    assert main(["check", "-c", str(ROOT / config), str(ROOT / bql)]) == 0
    assert capsys.readouterr().out == ""


def test_the_tutorial_file_without_its_plugins_fails():
    train = str(ROOT / "examples/sbml/train.bql")
    assert sbpy_check("--no-resolve", train, env={"SENSORBEE_CONFIG": ""}).returncode == 0
    proc = sbpy_check(train, env={"SENSORBEE_CONFIG": ""})
    assert proc.returncode == 1
    assert f"{train}:3:29: state type 'jubaclassifier_arow' is not registered" in proc.stdout.splitlines()


def test_plugin_function_arity_comes_from_the_analyzer(tmp_path, capsys):
    script = "EVAL my_inc(1, 2);\nEVAL nlp_split(\"a b\");"
    assert check(tmp_path, capsys, script, "-c", SBML_CONFIG)[:2] == (1, [
        "1:6: function 'my_inc' takes 1 argument, got 2",
        "2:6: function 'nlp_split' takes 2 arguments, got 1",
    ])
