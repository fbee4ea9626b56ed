"""The SensorBee document's two tutorials, from the files the README's commands use (in-process query
runner; ``tests/e2e/test_tutorials_spark.py`` runs ``sbpy runfile`` on Spark)."""
from __future__ import annotations

import functools
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest


from sbpy.bql.parser import parse_script
from sbpy.plugins.examples import tweets
from sbpy.plugins.examples.wordcount import NAMES
from sbpy.plugins.examples.udsfs import LOREM
from sbpy.server.app import install_uds_storage, load_plugins
from sbpy.server.cli.main import main
from sbpy.server.config import load_config
from sbpy.server.manager import TopologyManager
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology

from local_runner import start_local

ROOT = Path(__file__).resolve().parents[2]
WORDCOUNT = ROOT / "examples" / "wordcount"
SBML = ROOT / "examples" / "sbml"


class Ctx:
    def __init__(self, data_dir):
        self.data_dir = data_dir


def local_topology(name, ctx):
    return Topology(name, ctx, query_starter=start_local)


def serve(config, data_dir):
    """What ``sbpy run -c`` does at startup (the app's lifespan), with the in-process runner."""
    ctx = Ctx(data_dir)
    load_plugins(config)
    install_uds_storage(ctx, config)
    manager = TopologyManager(ctx, local_topology)
    manager.load_from_config(config)
    return manager


def take(cursor, n, timeout=20):
    out = []
    for _ in range(n):
        row = cursor.get(timeout)
        if row is None:
            break
        out.append(row)
    return out


def select(t, text):
    return t.select(parse_script(text)[0])


# ---------------------------------------------------------------- word count


def test_wordcount_config_starts_the_tutorial_topology(tmp_path):
    manager = serve(load_config(WORDCOUNT / "sensorbee.yaml"), tmp_path / "data")
    try:
        t = manager.get("wordcount")
        assert t.node("source", "sentences")["state"] == "running"
        assert sorted(n["name"] for n in t.list_nodes("stream")) == ["word_counts", "words"]
        cursor = select(t, "SELECT RSTREAM * FROM words [RANGE 1 TUPLES];")  # wc_sentences: one per second
        words = take(cursor, 5)
        cursor.close()
        assert len(words) == 5
        for w in words:
            assert sorted(w) == ["name", "word"] and w["name"] in NAMES and w["word"] in {x.lower() for x in LOREM}
    finally:
        manager.stop_all()


# the document's sentences (Getting Started: "Querying: Basics"), with the names of its GROUP BY example
SENTENCES = [
    {"name": "isabella", "text": "dolor consequat ut in ad in"},
    {"name": "emma", "text": "excepteur deserunt officia cillum lorem excepteur"},
    {"name": "isabella", "text": "exercitation ut sed aute ullamco aliquip"},
    {"name": "jacob", "text": "duis occaecat culpa dolor veniam elit"},
    {"name": "isabella", "text": "dolore laborum in consectetur amet ut nostrud ullamco"},
]


def test_wordcount_queries_give_the_documents_results(tmp_path):
    (tmp_path / "sentences.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SENTENCES))
    bql = (ROOT / "plugins" / "examples" / "data" / "wordcount.bql").read_text()
    source = "CREATE SOURCE sentences TYPE wc_sentences;"
    assert source in bql
    bql = bql.replace(source, f'CREATE PAUSED SOURCE sentences TYPE file WITH path = "{tmp_path}/sentences.jsonl";')
    manager = serve(load_config(WORDCOUNT / "sensorbee.yaml"), tmp_path / "data")
    t = manager.create("wc2")
    try:
        manager.run_script(t, bql)
        queries = {
            "rstream": "SELECT RSTREAM name, count(*) FROM sentences [RANGE 60 SECONDS] GROUP BY name;",
            "istream": "SELECT ISTREAM name, count(*) FROM sentences [RANGE 60 SECONDS] GROUP BY name;",
            "tokens": 'SELECT RSTREAM * FROM wc_tokenizer("sentences", "text") [RANGE 1 TUPLES];',
            "words": "SELECT RSTREAM * FROM words [RANGE 1 TUPLES];",
            "counts": "SELECT ISTREAM word, count(*) FROM words [RANGE 60 SECONDS] GROUP BY word;",
            "maxmin": "SELECT RSTREAM max(count), min(count) FROM word_counts [RANGE 60 SECONDS];",
        }
        cursors = {k: select(t, q) for k, q in queries.items()}
        manager.run_script(t, "RESUME SOURCE sentences;")
        tokens = [(s["name"], w) for s in SENTENCES for w in s["text"].split(" ")]
        n = len(tokens)
        got = {k: take(c, {"rstream": 11, "istream": 5}.get(k, n)) for k, c in cursors.items()}
        for c in cursors.values():
            c.close()
    finally:
        manager.stop_all()
    # what the document shows for isabella, emma, isabella, jacob, isabella
    assert got["rstream"] == [
        {"count": 1, "name": "isabella"},
        {"count": 1, "name": "isabella"}, {"count": 1, "name": "emma"},
        {"count": 2, "name": "isabella"}, {"count": 1, "name": "emma"},
        {"count": 2, "name": "isabella"}, {"count": 1, "name": "emma"}, {"count": 1, "name": "jacob"},
        {"count": 3, "name": "isabella"}, {"count": 1, "name": "emma"}, {"count": 1, "name": "jacob"}]
    assert got["istream"] == [{"count": 1, "name": "isabella"}, {"count": 1, "name": "emma"},
                              {"count": 2, "name": "isabella"}, {"count": 1, "name": "jacob"},
                              {"count": 3, "name": "isabella"}]
    # wc_tokenizer: one tuple per word, the word replacing the text; words renames it
    assert got["tokens"] == [{"name": a, "text": w} for a, w in tokens]
    assert got["words"] == [{"name": a, "word": w} for a, w in tokens]
    # ISTREAM word counts: each word's new count as it arrives; max/min over the word_counts stream
    seen: Counter[str] = Counter()
    expected_counts, expected_maxmin, history = [], [], []
    for _, w in tokens:
        seen[w] += 1
        expected_counts.append({"word": w, "count": seen[w]})
        history.append(seen[w])
        expected_maxmin.append({"max": max(history), "min": min(history)})
    assert got["counts"] == expected_counts
    assert got["maxmin"] == expected_maxmin


# ---------------------------------------------------------------- machine learning


def accuracy(labeled, truth, field):
    pairs = [(r[field], truth[r["id"]][field]) for r in labeled if truth[r["id"]][field]]
    right = sum(p == t for p, t in pairs) / len(pairs)
    majority = Counter(t for _, t in pairs).most_common(1)[0][1] / len(pairs)
    return right, majority


def label_held_out(folder, data_dir):
    """The serving topology of ``sensorbee.yaml`` (classify.bql) over ``tweets.json``."""
    held_out = tweets.generate(200, seed=2)
    (folder / "tweets.json").write_text("".join(json.dumps(t) + "\n" for t in held_out))
    manager = serve(load_config(folder / "sensorbee.yaml"), data_dir)
    try:
        t = manager.get("twitter")
        out = folder / "labeled_tweets.json"
        assert wait_until(lambda: out.exists() and len(out.read_text().splitlines()) == len(held_out), 30)
    finally:
        manager.stop_all()
    labeled = [json.loads(x) for x in out.read_text().splitlines()]
    truth = {t["id_str"]: t for t in held_out}
    for field in ("gender", "age"):
        right, majority = accuracy(labeled, truth, field)
        print(f"{field}: accuracy {right:.3f} on {len(labeled)} held-out tweets (majority class {majority:.3f})")
        assert right > majority
    return t


def tutorial_folder(tmp_path):
    folder = tmp_path / "sbml"
    folder.mkdir()
    for name in ("sensorbee.yaml", "train.bql", "classify.bql"):
        shutil.copy(SBML / name, folder / name)  # follows the symlinks to plugins/examples/data
    return folder


def test_machine_learning_tutorial_offline(tmp_path, monkeypatch, capsys):
    folder = tutorial_folder(tmp_path)
    monkeypatch.chdir(folder)
    tweets.main(["500"])
    (folder / "training_tweets.json").write_text(capsys.readouterr().out)
    # `sbpy runfile -t twitter -c sensorbee.yaml -s '' train.bql` with the in-process runner instead of Spark
    import sbpy.server.context as context_module
    import sbpy.server.topology as topology_module

    monkeypatch.setattr(topology_module, "Topology", functools.partial(Topology, query_starter=start_local))
    monkeypatch.setattr(context_module.ServerContext, "warm_up", lambda self: None)
    assert main(["runfile", "-t", "twitter", "-c", "sensorbee.yaml", "-s", "", "train.bql"]) == 0
    err = capsys.readouterr().err
    assert "saved state 'age_model'" in err and "saved state 'gender_model'" in err
    assert sorted(p.name for p in (folder / "uds").iterdir()) == ["twitter-age_model-default.state",
                                                                  "twitter-gender_model-default.state"]
    monkeypatch.undo()
    monkeypatch.chdir(folder)  # classify.bql reads tweets.json and writes labeled_tweets.json here
    t = label_held_out(folder, tmp_path / "data")
    assert sorted(s["name"] for s in t.states.list()) == []  # stopped: its states were terminated


def test_runfile_saves_only_the_listed_states(tmp_path, monkeypatch, capsys):
    import sbpy.server.context as context_module
    import sbpy.server.topology as topology_module

    monkeypatch.setattr(topology_module, "Topology", functools.partial(Topology, query_starter=start_local))
    monkeypatch.setattr(context_module.ServerContext, "warm_up", lambda self: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sb.yaml").write_text("plugins: [sbpy.plugins.examples]\nstorage:\n  uds:\n    type: fs\n"
                                      "    params: {dir: uds}\n")
    (tmp_path / "s.bql").write_text("CREATE STATE a TYPE my_counter; CREATE STATE b TYPE my_counter;\n")
    assert main(["runfile", "-c", "sb.yaml", "-s", "b", "s.bql"]) == 0
    assert [p.name for p in (tmp_path / "uds").iterdir()] == ["s-b-default.state"]
    assert main(["runfile", "-c", "sb.yaml", "-s", "a,nope", "s.bql"]) == 1
    assert "state 'nope' was not found" in capsys.readouterr().err
    assert main(["runfile", "-c", "sb.yaml", "s.bql"]) == 0  # no -s: nothing more saved
    assert sorted(p.name for p in (tmp_path / "uds").iterdir()) == ["s-a-default.state", "s-b-default.state"]


@pytest.mark.spark
def test_sbpy_run_with_the_wordcount_config_and_the_shell(tmp_path):
    """``sbpy run -c`` (a real process) with examples/wordcount/sensorbee.yaml (port, data folder and
    Spark warm-up changed for the test) and the tutorial's first shell statements. Its streams compute
    from their CREATE (``words`` calls a UDSF, ``word_counts`` aggregates), so the server starts their
    Spark queries while it loads the topology: a Spark test."""
    import signal
    import socket
    import subprocess
    import sys
    import time

    import httpx
    import yaml

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    doc = yaml.safe_load((WORDCOUNT / "sensorbee.yaml").read_text())
    for name, entry in doc["topologies"].items():
        entry["bql_file"] = str((WORDCOUNT / entry["bql_file"]).resolve())
    doc["network"] = {"listen_on": f"127.0.0.1:{port}"}
    doc["spark"] = {"warm_up": False, "data_dir": str(tmp_path / "data")}
    doc["logging"] = {"min_log_level": "warn"}
    (tmp_path / "sensorbee.yaml").write_text(yaml.safe_dump(doc))
    proc = subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", "sensorbee.yaml"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 300  # the topology is readable once its queries started on Spark
        while True:
            try:
                r = httpx.get(url + "api/v1/topologies/wordcount/sources/sentences", timeout=2)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert r.json()["source"]["state"] == "running"
        streams = httpx.get(url + "api/v1/topologies/wordcount/streams", timeout=5).json()["streams"]
        assert sorted(s["name"] for s in streams) == ["word_counts", "words"]
        shell = subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "shell", "-t", "wordcount", "--uri",
                                url], input='EVAL 1 + 1;\nEVAL power(2.0, 2.5);\nEVAL "Hello" || ", world!";\n',
                               capture_output=True, text=True, timeout=60)
        assert shell.stdout.split("\n")[:3] == ["2", "5.656854249492381", '"Hello, world!"'], shell.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=120)
