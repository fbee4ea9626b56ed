"""The examples shown at the end of ``sbpy --help`` and ``sbpy COMMAND --help`` (plain text, no RST).

``add_examples(subparsers)`` gives each built-in subcommand's parser its epilog and a formatter that
keeps the examples' line breaks; subcommands from plugins bring their own help.
"""
from __future__ import annotations

import argparse

MAIN = """\
examples:
  sbpy run -c sensorbee.yaml                  serve the topologies of a config
  sbpy shell -t wordcount                     type BQL statements against a running server
  sbpy check -c sensorbee.yaml topology.bql   find syntax, statement and name errors without a server
  sbpy runfile -t twitter -s '' train.bql     run a BQL file until its sources stop

environment:
  SENSORBEE_CONFIG   the config file of run, runfile and check when -c is not given
  SBPY_URI           the server of shell, topology and check --topology (default http://127.0.0.1:15601/)
  SBPY_AUTH_TOKEN    the bearer token client commands send (network.auth_token)

Installed packages may add commands through the 'sbpy.commands' entry-point group.
"""

EXAMPLES = {
    "run": """\
examples:
  sbpy run                                   defaults: listen on 127.0.0.1:15601, no topologies
  sbpy run -c sensorbee.yaml                 the config's topologies, plugins, storage and logging
  sbpy run -c sensorbee.yaml --listen :8080  the same on port 8080 of every interface
  sbpy run --log-format json                 log JSON lines (also SBPY_LOG_FORMAT=json)
  SENSORBEE_CONFIG=sensorbee.yaml sbpy run

Spark's own log lines are written through the same log, in the same format.
""",
    "runfile": """\
Every source is created paused and resumed once all statements ran; the command ends when every
source stopped and every query drained. A file with an unknown name (function, type, stream, sink,
state) is rejected before Spark starts. While it runs, stderr shows the tuples read and written
per node with their rates (a plain line every 5 s when stderr is not a terminal), then a summary.

examples:
  sbpy runfile wordcount.bql                        topology 'wordcount'
  sbpy runfile -c sensorbee.yaml -t twitter train.bql
  sbpy runfile -t twitter -c sensorbee.yaml -s '' train.bql
                                                    then save every state that supports saving
  sbpy runfile -s age_model,gender_model train.bql  save these states (tag 'default')
""",
    "shell": """\
Statements end with ';'. Shell commands: USE <topology>, FILE <path>, help [statement],
\\t [table|json], exit. Tab completes statements, keywords, functions and the topology's nodes;
Ctrl-C cancels the running statement (a SELECT too) and keeps the shell.

examples:
  sbpy shell -t wordcount
  sbpy shell -t wordcount --format table      SELECT rows as a table
  sbpy shell --uri http://sensors.example.com:15601/ -t t1
  SBPY_URI=http://sensors.example.com:15601/ sbpy shell -t t1
  echo 'EVAL 1 + 2;' | sbpy shell -t t1
""",
    "topology": """\
examples:
  sbpy topology create t1      (sbpy t c t1)
  sbpy topology list           (sbpy t l)
  sbpy topology drop t1        succeeds if t1 does not exist
""",
    "check": """\
A FILE's names are resolved in statement order: a stream, source, sink or state must be created
before it is used, and every function, UDSF and type must be registered (built-ins, installed
plugins, the config's plugins). Stdin is resolved only with --resolve, --config or --topology.

examples:
  sbpy check topology.bql
  sbpy check -c sensorbee.yaml classify.bql     the config's plugins define more functions and types
  sbpy check -t twitter more.bql                also the nodes of topology 'twitter' on $SBPY_URI
  echo 'SELECT RSTREAM * FROM src [RANGE 1 TUPLES];' | sbpy check -
  echo 'EVAL abs(-1);' | sbpy check --resolve -
""",
    "plugins": """\
examples:
  sbpy plugins                                   kind, name and module of every component
  sbpy plugins -c sensorbee.yaml --kind udf      with the config's plugins, UDFs only
  sbpy plugins -m my_plugin --json
""",
}


def add_examples(subparsers: argparse._SubParsersAction) -> None:
    """Set the epilog of every built-in subcommand parser in ``subparsers`` (aliases share one)."""
    for name, parser in subparsers.choices.items():
        text = EXAMPLES.get(name)
        if text is not None and not parser.epilog:
            parser.epilog = text
            parser.formatter_class = argparse.RawDescriptionHelpFormatter
