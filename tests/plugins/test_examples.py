"""The SensorBee document's plugins, run from BQL without Spark."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sbpy.bql.errors import BQLEvaluationError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.parser import parse_expression, parse_one
from sbpy.bql.runtime import ProcessorContext
from sbpy.bql.runtime.testing import run_query, run_query_detailed
from sbpy.plugins import PluginRegistries
from sbpy.plugins import examples
from sbpy.plugins.builtin.uds_sink import UDSSink
from sbpy.plugins.examples import tweets
from sbpy.server.states import StateManager
from sbpy.server.uds_storage import InMemoryStorage

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def topo():
    regs = PluginRegistries()
    examples.register(regs)
    plugins = regs.for_topology("t")
    states = StateManager("t", InMemoryStorage(), plugins)
    plugins.bind_states(states)
    plugins.state_manager = states
    return plugins


def ev(topo, text):
    return evaluate_constant(parse_expression(text), topo.functions)


def ctx(topo):
    return ProcessorContext(functions=topo.functions, udsfs=topo.udsfs, states=topo.states, topology="t")


@pytest.mark.parametrize("expr,want", [
    ("my_inc(1)", 2), ("my_inc(1.5)", 2), ('my_inc("10")', 11),
    ('my_join("a", "b", "c", "-")', "a-b-c"), ('my_join(["a", "b", "c"], ",")', "a,b,c"),
    ('my_join2(["a", "b", "c"], ",")', "a,b,c"), ('my_join2([1, "b", "c"], ",")', "1,b,c"),
    ('juba_classified_label({"male": 0.021, "female": -0.02})', "male"),
    ('nlp_split(nlp_to_lower(filter_punctuation_marks("I want, SUSHI!")), " ")', ["i", "want", "sushi"]),
])
def test_document_evals(topo, expr, want):
    assert ev(topo, expr) == want


@pytest.mark.parametrize("expr", ['my_join(1, "b", "c", "-")', 'my_join([1, "b", "c"], ",")'])
def test_document_eval_errors(topo, expr):
    with pytest.raises(BQLEvaluationError):
        ev(topo, expr)


def test_counter_numbers_events(topo):
    topo.state_manager.create(parse_one("CREATE STATE my_counter_instance TYPE my_counter WITH start = 100"))
    out = run_query('SELECT RSTREAM my_next_count("my_counter_instance") AS id, * FROM events [RANGE 1 TUPLES]',
                    {"events": [{"a": 1}, {"a": 2}]}, context=ctx(topo))
    assert out == [{"id": 100, "a": 1}, {"id": 101, "a": 2}]
    res = run_query_detailed('SELECT RSTREAM my_next_count("nope") AS id FROM events [RANGE 1 TUPLES]',
                             {"events": [{"a": 1}]}, context=ctx(topo))
    assert res.outputs == [] and "state 'nope' was not found" in res.dropped[0].error


def test_word_splitter_and_wordcount(topo):
    out = run_query('SELECT RSTREAM * FROM word_splitter("s", "w") [RANGE 1 TUPLES]',
                    {"s": [{"w": "a b c", "k": 1}]}, context=ctx(topo))
    assert out == [{"w": "a", "k": 1}, {"w": "b", "k": 1}, {"w": "c", "k": 1}]
    from sbpy.plugins.examples.wordcount import SentencesSource

    sentences = [d for d, _ in SentencesSource({"seed": 3, "interval": 0}).collect(20)]
    words = run_query('SELECT RSTREAM name, text AS word FROM wc_tokenizer("sentences", "text") [RANGE 1 TUPLES]',
                      {"sentences": sentences}, context=ctx(topo))
    assert len(words) == sum(len(s["text"].split(" ")) for s in sentences)
    counts = run_query("SELECT ISTREAM word, count(*) FROM words [RANGE 60 SECONDS] GROUP BY word",
                       {"words": words}, context=ctx(topo))
    final = {}
    for row in counts:
        final[row["word"]] = row["count"]
    assert sum(final.values()) == len(words)


def test_lorem_and_ticker_sources(topo):
    lorem = topo.source_types.lookup("lorem")({"seed": 1})
    texts = [d["text"] for d, _ in lorem.collect(3)]
    assert all(5 <= len(t.split(" ")) <= 9 for t in texts)
    assert [d for d, _ in topo.source_types.lookup("ticker")({"interval": 0.1}).collect(2)] == [{"tick": 0}, {"tick": 1}]


FV = ('SELECT RSTREAM {"text": nlp_weight_tf(filter_stop_words(nlp_split(nlp_to_lower('
      'filter_punctuation_marks(text)), " "))), "description": nlp_weight_tf(filter_stop_words(nlp_split('
      'nlp_to_lower(filter_punctuation_marks(description)), " ")))} AS feature_vector, age, gender '
      'FROM tweets [RANGE 1 TUPLES] WHERE lang = "en"')


def test_machine_learning_tutorial(topo):
    states = topo.state_manager
    states.create(parse_one('CREATE STATE gender_model TYPE jubaclassifier_arow '
                            'WITH label_field = "gender", regularization_weight = 0.001'))
    trainer = topo.sink_types.lookup("uds")({"name": "gender_model"})
    train = run_query(FV, {"tweets": tweets.generate(400, seed=1)}, context=ctx(topo))
    trainer.write([r for r in train if r["gender"] != ""], batch=("q", 0))
    states.save(parse_one("SAVE STATE gender_model TAG trained"))
    states.drop("gender_model")
    states.load(parse_one("LOAD STATE gender_model TYPE jubaclassifier_arow TAG trained"))
    test = run_query(FV, {"tweets": tweets.generate(200, seed=2)}, context=ctx(topo))
    labeled = run_query('SELECT RSTREAM juba_classified_label(jubaclassify("gender_model", feature_vector)) AS g,'
                        ' gender FROM fv [RANGE 1 TUPLES] WHERE gender != ""', {"fv": test}, context=ctx(topo))
    accuracy = sum(r["g"] == r["gender"] for r in labeled) / len(labeled)
    assert accuracy > 0.8


def test_uds_sink_requires_a_writable_state(topo):
    topo.state_manager.create(parse_one("CREATE STATE c TYPE my_counter"))
    with pytest.raises(ValueError, match="state 'c' does not support writing tuples"):
        topo.sink_types.lookup("uds")({"name": "c"})
    with pytest.raises(ValueError, match="state 'nope' was not found"):
        topo.sink_types.lookup("uds")({"name": "nope"})
    with pytest.raises(ValueError, match="name parameter is missing"):
        topo.sink_types.lookup("uds")({})


def test_uds_sink_sees_replacements_and_counts_errors(topo):
    states = topo.state_manager
    states.create(parse_one('CREATE STATE m TYPE jubaclassifier_arow WITH label_field = "l"'))
    sink = topo.sink_types.lookup("uds")({"name": "m"}, recovering=False)
    sink.write([{"l": "a", "feature_vector": {"x": 1}}, {"l": 5, "feature_vector": {}}], ("q", 0))
    assert sink.status()["num_errors"] == 1
    states.drop("m")
    states.create(parse_one('CREATE STATE m TYPE jubaclassifier_arow WITH label_field = "l"'))
    sink.write([{"l": "b", "feature_vector": {"y": 1}}], ("q", 1))
    assert list(states.get("m").weights) == ["b"]
    sink.write([{"l": "c", "feature_vector": {"y": 1}}], ("q", 1))  # replayed batch: skipped
    assert list(states.get("m").weights) == ["b"]
    assert isinstance(UDSSink({"name": "m"}, context=topo.context), UDSSink)


def test_installable_plugin_package(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples" / "my_plugin"))
    sys.modules.pop("my_plugin", None)
    from sbpy.plugins.loader import load_modules

    regs = PluginRegistries()
    load_modules(["my_plugin:register"], regs)
    plugins = regs.for_topology("t")
    states = StateManager("t", InMemoryStorage(), plugins)
    plugins.bind_states(states)
    assert evaluate_constant(parse_expression('my_plugin_reverse("abc")'), plugins.functions) == "cba"
    states.create(parse_one('CREATE STATE h TYPE my_plugin_histogram WITH field = "w"'))
    plugins.sink_types.lookup("uds")({"name": "h"}).write([{"w": "x"}, {"w": "x"}])
    assert evaluate_constant(parse_expression('my_plugin_count("h", "x")'), plugins.functions) == 2
    text = (ROOT / "examples" / "my_plugin" / "pyproject.toml").read_text()
    assert '[project.entry-points."sbpy.plugins"]' in text
