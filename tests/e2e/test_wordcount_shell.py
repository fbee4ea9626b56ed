"""The word count tutorial's shell session against ``sbpy run -c examples/wordcount/sensorbee.yaml``
(real processes, Spark): SELECTs print one JSON line per tuple until Ctrl-C (SIGINT), then the shell
goes on with the next statement."""
from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from sbpy.plugins.examples.wordcount import NAMES

pytestmark = pytest.mark.spark

WORDCOUNT = Path(__file__).resolve().parents[2] / "examples" / "wordcount"
SESSION = [
    ("SELECT RSTREAM * FROM sentences [RANGE 1 TUPLES];",
     lambda row: set(row) == {"name", "text"} and row["name"] in NAMES),
    ("SELECT RSTREAM * FROM wc_tokenizer(\"sentences\", \"text\") [RANGE 1 TUPLES];",
     lambda row: row["name"] in NAMES and " " not in row["text"]),
    ("SELECT RSTREAM max(count), min(count) FROM word_counts [RANGE 60 SECONDS];",
     lambda row: set(row) == {"max", "min"} and row["max"] >= row["min"] >= 1),
]


def test_tutorial_shell_session(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    doc = yaml.safe_load((WORDCOUNT / "sensorbee.yaml").read_text())
    for entry in doc["topologies"].values():
        entry["bql_file"] = str((WORDCOUNT / entry["bql_file"]).resolve())
    doc["network"] = {"listen_on": f"127.0.0.1:{port}"}
    doc["spark"] = {"data_dir": str(tmp_path / "data"), "master": "local[2]"}
    doc["logging"] = {"min_log_level": "warn"}
    (tmp_path / "sensorbee.yaml").write_text(yaml.safe_dump(doc))
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", "sensorbee.yaml"],
                              cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    shell = None
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url + "api/v1/topologies/wordcount", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
                time.sleep(0.2)
        for text, check in SESSION:
            shell = subprocess.Popen([sys.executable, "-u", "-m", "sbpy.server.cli.main", "shell", "-t",
                                      "wordcount", "--uri", url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
            shell.stdin.write(text + '\nEVAL "Hello" || ", world!";\n')
            shell.stdin.close()
            rows = []
            while len(rows) < 2:
                line = shell.stdout.readline()
                assert line, f"the shell ended during {text}: {shell.stderr.read()}"
                rows.append(json.loads(line))
            assert all(check(r) for r in rows), (text, rows)
            shell.send_signal(signal.SIGINT)  # Ctrl-C ends the SELECT; the session goes on with the EVAL
            out, err = shell.stdout.read(), shell.stderr.read()
            shell.wait(timeout=60)
            assert shell.returncode == 0, err
            assert out.splitlines()[-1] == '"Hello, world!"', (text, out[-500:], err)
            assert all(check(json.loads(x)) for x in out.splitlines()[:-1]), text
    finally:
        if shell is not None and shell.poll() is None:
            shell.kill()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
