"""The machine learning tutorial's training command, as the README gives it, on Spark:
``sbpy runfile -t twitter -c sensorbee.yaml -s '' train.bql`` in a copy of ``examples/sbml``; then a
serving topology loads the saved models with ``LOAD STATE ... OR CREATE IF NOT SAVED`` (classify.bql's
first statements) and labels held-out tweets better than the majority class."""
from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from sbpy.bql.parser import parse_script
from sbpy.plugins.examples import nlp, tweets
from sbpy.plugins.loader import load_modules
from sbpy.server.topology import Topology
from sbpy.server.uds_storage import FsStorage

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


class Ctx:
    def __init__(self, data_dir, storage):
        self.data_dir, self.uds_storage = data_dir, storage


def fv(t):
    def vec(text):
        return nlp.nlp_weight_tf(nlp.filter_stop_words(nlp.nlp_split(nlp.nlp_to_lower(
            nlp.filter_punctuation_marks(text)), " ")))
    return {"text": vec(t["text"]), "description": vec(t["description"])}


def test_runfile_trains_and_saves_both_models_on_spark(tmp_path):
    folder = tmp_path / "sbml"
    folder.mkdir()
    for name in ("sensorbee.yaml", "train.bql", "classify.bql"):
        shutil.copy(ROOT / "examples" / "sbml" / name, folder / name)
    data = subprocess.run([sys.executable, "-m", "sbpy.plugins.examples.tweets", "500"], capture_output=True,
                          text=True, check=True).stdout
    (folder / "training_tweets.json").write_text(data)
    r = subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "runfile", "-t", "twitter", "-c",
                        "sensorbee.yaml", "-s", "", "train.bql"], cwd=folder, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(p.name for p in (folder / "uds").iterdir()) == ["twitter-age_model-default.state",
                                                                  "twitter-gender_model-default.state"]
    load_modules(["sbpy.plugins.examples"])
    t = Topology("twitter", Ctx(tmp_path / "data", FsStorage(folder / "uds")))
    try:
        loads = [p for p in parse_script((folder / "classify.bql").read_text())
                 if type(p.stmt).__name__ == "LoadState"]
        assert len(loads) == 2
        for p in loads:
            t.execute(p)
        held_out = tweets.generate(200, seed=2)
        for field in ("gender", "age"):
            model = t.states.get(f"{field}_model")
            pairs = [(max(s.items(), key=lambda kv: kv[1])[0], x[field])
                     for x in held_out if x[field] and (s := model.classify(fv(x)))]
            right = sum(p == y for p, y in pairs) / len(pairs)
            majority = Counter(y for _, y in pairs).most_common(1)[0][1] / len(pairs)
            print(f"{field}: accuracy {right:.3f} (majority class {majority:.3f}) on {len(pairs)} held-out tweets")
            assert right > majority
    finally:
        t.stop()
