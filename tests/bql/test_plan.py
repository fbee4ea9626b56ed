"""The planner: which execution a chain gets and why, per-stage facts, forcing, EXPLAIN text."""
from __future__ import annotations

import pytest

from sbpy.bql.plan import Execution, Tier, Where, plan_query
from sbpy.bql.plan.explain import as_dict, render
from sbpy.bql.plan.planner import KEYED_MATCH_ENV, KEYED_WINDOWS_ENV

FILTER = "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8"
ISTREAM = "SELECT ISTREAM id FROM s1 [RANGE 2 TUPLES]"
BIG = "SELECT RSTREAM count(*) AS n FROM src [RANGE 5 SECONDS]"
MATCH = ("SELECT RSTREAM * FROM src [RANGE 1 TUPLES] MATCH_RECOGNIZE (PARTITION BY k ORDER BY ts "
         "MEASURES A.id AS a PATTERN (A B) DEFINE A AS A.x = 1, B AS B.x = 2)")


def _plan(*stages, inputs=("src",), **kw):
    return plan_query(list(inputs), [(n, t, list(i)) for n, t, i in stages], **kw)


def test_memoryless_chain_is_stateless_on_every_partition():
    plan = _plan(("s1", FILTER, ["src"]), ("s2", "SELECT RSTREAM sin(id) AS d FROM s1 [RANGE 1 TUPLES]", ["s1"]))
    assert plan.execution is Execution.STATELESS
    assert [s.tier for s in plan.stages] == [Tier.VECTORIZED, Tier.VECTORIZED]
    assert all(s.where is Where.EXECUTOR and s.state == "none" for s in plan.stages)
    assert plan.stages[0].statement is not None  # analyzed once, carried to the workers


def test_small_bounded_state_runs_on_the_driver():
    plan = _plan(("s1", FILTER, ["src"]), ("s2", ISTREAM, ["s1"]))
    assert plan.execution is Execution.DRIVER
    assert "small bounded state" in plan.reason
    assert plan.stages[1].bounded_tuples == 2 and not plan.stages[1].stateless
    assert "ISTREAM compares with the previous relation" == plan.stages[1].why


def test_time_window_is_sequential_with_its_reason():
    plan = _plan(("s1", BIG, ["src"]))
    assert plan.execution is Execution.SEQUENTIAL
    assert plan.stages[0].bounded_tuples is None
    assert "global arrival order" in plan.reason


def test_match_recognize_with_partition_by_is_keyed_on_request_and_explained(monkeypatch):
    default = _plan(("m", MATCH, ["src"]))  # keyed measured 3-7x slower than the driver on 2 cores
    assert default.execution is Execution.DRIVER and default.reason.startswith("MATCH_RECOGNIZE with PARTITION BY")
    assert default.stages[0].tier_why.startswith("keyed execution possible but not chosen")
    assert KEYED_MATCH_ENV in default.stages[0].tier_why
    assert _plan(("m", MATCH, ["src"]), force=Execution.KEYED).execution is Execution.KEYED
    monkeypatch.setenv(KEYED_MATCH_ENV, "1")
    plan = _plan(("m", MATCH, ["src"]))
    assert plan.execution is Execution.KEYED
    assert plan.stages[0].tier is Tier.KEYED
    assert "inside the journal reads (sbpy_routed)" in plan.stages[0].partitioning  # no stage before it
    chain = _plan(("f", "SELECT RSTREAM * FROM src [RANGE 1 TUPLES] WHERE ts > 0", ["src"]),
                  ("m", MATCH.replace("FROM src", "FROM f"), ["f"]))
    assert chain.execution is Execution.KEYED
    assert "one-group router runs the stages before it" in chain.stages[1].partitioning
    assert chain.stages[0].partitioning.startswith("one group (router or tail")


@pytest.mark.parametrize("text, why", [
    ("SELECT RSTREAM a FROM src [RANGE 1 TUPLES] LIMIT 3", "LIMIT"),
    ("SELECT RSTREAM count(*) AS n FROM src [RANGE 1 TUPLES]", "aggregates"),
    ("SELECT ISTREAM a FROM src [RANGE 1 TUPLES]", "ISTREAM"),
    ("SELECT RSTREAM a FROM src [RANGE 2 TUPLES]", "more than the current tuple"),
])
def test_stateful_forms_are_not_stateless(text, why):
    plan = _plan(("s", text, ["src"]))
    assert plan.execution is not Execution.STATELESS
    assert why in plan.stages[0].why


def test_union_of_two_inputs_is_not_stateless():
    union = ("SELECT RSTREAM a FROM src [RANGE 1 TUPLES] UNION ALL "
             "SELECT RSTREAM a FROM other [RANGE 1 TUPLES]")
    plan = _plan(("u", union, ["src", "other"]), inputs=("src", "other"))
    assert plan.stages[0].stateless
    assert plan.execution is Execution.DRIVER  # memoryless, but its end needs both inputs


def test_dropping_buffer_keeps_the_batch_together():
    text = "SELECT RSTREAM a FROM src [RANGE 1 TUPLES, BUFFER SIZE 4, DROP OLDEST IF FULL]"
    plan = _plan(("s", text, ["src"]))
    assert plan.execution is not Execution.STATELESS
    assert plan.stages[0].buffers == ("src: BUFFER SIZE 4, DROP OLDEST IF FULL",)


def test_stateful_calls_go_to_the_driver():
    plan = _plan(("s", FILTER, ["src"]), stateful_calls=lambda stmt: ["my_next_count"])
    assert plan.execution is Execution.DRIVER
    assert plan.stateful_calls == ["my_next_count"]
    assert "UDS" in plan.reason


def test_force_applies_only_where_allowed(monkeypatch):
    stateless = [("s1", FILTER, ["src"])]
    assert _plan(*stateless, force=Execution.SEQUENTIAL).execution is Execution.SEQUENTIAL
    assert _plan(*stateless, force=Execution.DRIVER).execution is Execution.DRIVER
    stateful = [("s1", BIG, ["src"])]
    assert _plan(*stateful, force=Execution.STATELESS).execution is Execution.SEQUENTIAL  # not allowed
    assert _plan(*stateful, force=Execution.KEYED).execution is Execution.SEQUENTIAL
    monkeypatch.setenv("SBPY_FORCE_EXECUTION", "sequential")
    assert _plan(*stateless).execution is Execution.SEQUENTIAL


def test_explain_text_and_dict(monkeypatch):
    monkeypatch.setenv("SBPY_NATIVE", "0")  # the vectorized tier (the native one: test_plan_native.py)
    plan = _plan(("s1", FILTER, ["src"]))
    text = render(plan, {"s1": "(select)"})
    assert text.splitlines()[0].startswith("execution: stateless (")
    assert "stage (select) [vectorized-python]" in text
    assert "  tier: native tier not used: the native function is not available: SBPY_NATIVE=0" in text
    assert "  runs on: executor Python" in text
    assert "  " + FILTER in text
    doc = as_dict(plan)
    assert doc["execution"] == "stateless" and doc["stages"][0]["tier"] == "vectorized-python"
    assert doc["text"] == render(plan)


def test_ticking_stage_is_sequential_with_a_trigger():
    text = "SELECT RSTREAM count(*) AS c FROM src EMIT PERIODIC 500 MILLISECONDS REPEAT"
    plan = _plan(("t", text, ["src"]))
    assert plan.execution is Execution.SEQUENTIAL and plan.tick_ms == 500
    assert plan.stages[0].tick_ms == 500 and "wall clock" in plan.reason


WINDOW = ("SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, t, 5s) WHERE v > 0 "
          "GROUP BY k, window_start")


def test_window_group_by_over_plain_fields_is_keyed_on_request_and_explained(monkeypatch):
    default = _plan(("w", WINDOW, ["src"]))  # keyed measured slower than one group on 2 cores
    assert default.execution is Execution.DRIVER and "Timeplus window aggregation" in default.reason
    assert default.stages[0].tier is Tier.DRIVER
    assert default.stages[0].tier_why.startswith("keyed execution possible but not chosen")
    assert _plan(("w", WINDOW, ["src"]), force=Execution.KEYED).execution is Execution.KEYED
    monkeypatch.setenv(KEYED_WINDOWS_ENV, "1")
    plan = _plan(("w", WINDOW, ["src"]))
    assert plan.execution is Execution.KEYED and "tumble/hop GROUP BY" in plan.reason
    stage = plan.stages[0]
    assert stage.tier is Tier.KEYED and "plain GROUP BY fields" in stage.partitioning
    assert "window start" in stage.state
    text = render(plan)
    assert "ordered router" in text and "[keyed-python]" in text
    assert _plan(("w", WINDOW, ["src"]), force=Execution.SEQUENTIAL).execution is Execution.SEQUENTIAL


@pytest.mark.parametrize("text, why", [
    ("SELECT RSTREAM k, count(*) AS n, window_start FROM session(src, t, 5s) GROUP BY k, window_start",
     "session windows are not keyed yet"),
    ("SELECT RSTREAM count(*) AS n, window_start FROM tumble(src, t, 5s) GROUP BY window_start",
     "no plain GROUP BY key"),
    ("SELECT RSTREAM k, count(*) AS n, window_start FROM tumble(src, t, 5s) GROUP BY k, window_start LIMIT 2",
     "LIMIT / OFFSET"),
])
def test_other_window_stages_stay_in_one_group_and_say_why(text, why):
    plan = _plan(("w", text, ["src"]))
    assert plan.execution is Execution.DRIVER
    assert plan.stages[0].tier_why.startswith("keyed execution not used: ") and why in plan.stages[0].tier_why
    assert why in render(plan)
    assert _plan(("w", text, ["src"]), force=Execution.KEYED).execution is Execution.DRIVER  # not keyable


def test_window_behind_another_stage_is_not_keyed():
    plan = _plan(("f", FILTER, ["src"]), ("w", WINDOW.replace("tumble(src", "tumble(f"), ["f"]))
    assert plan.execution is Execution.DRIVER  # a memoryless stage before the window: still windows only
    assert "does not split around this window stage" in plan.stages[1].tier_why


def test_window_chains_with_other_state_or_ticks_stay_sequential():
    ranged = "SELECT RSTREAM * FROM src [RANGE 1000 TUPLES] WHERE v > 0"
    plan = _plan(("f", ranged, ["src"]), ("w", WINDOW.replace("tumble(src", "tumble(f"), ["f"]))
    assert plan.execution is Execution.SEQUENTIAL and "global arrival order" in plan.reason
    periodic = WINDOW + " EMIT PERIODIC 1s"
    plan = _plan(("w", periodic, ["src"]))
    assert plan.execution is Execution.SEQUENTIAL and plan.tick_ms


def test_explain_names_the_window_kernels_pane_layout(monkeypatch):
    assert "groups as aggregate columns" in render(_plan(("w", WINDOW, ["src"])))
    session = WINDOW.replace("tumble(src, t, 5s)", "session(src, t, 5s)")
    assert "groups as aggregate columns" in render(_plan(("w", session, ["src"])))
    assert "groups as tagged rows" in render(_plan(("w", session + " EMIT ON UPDATE", ["src"])))
    monkeypatch.setenv("SBPY_TIMEPLUS_PANES", "rows")
    assert "groups as tagged rows" in render(_plan(("w", WINDOW, ["src"])))


def test_one_group_match_recognize_runs_on_the_driver():
    one_group = MATCH.replace("PARTITION BY k ", "")
    plan = _plan(("m", one_group, ["src"]))
    assert plan.execution is Execution.DRIVER and plan.reason.startswith("MATCH_RECOGNIZE:")
    assert not plan.stages[0].tier_why  # nothing to key by
    assert plan.stages[0].tier is Tier.DRIVER and "driver snapshot file" in plan.stages[0].state
    both = _plan(("m", one_group, ["src"]), ("w", WINDOW, ["src"]))
    assert both.execution is Execution.DRIVER and "Timeplus window aggregation" in both.reason
    ranged = _plan(("m", one_group, ["src"]), ("r", "SELECT RSTREAM * FROM src [RANGE 1000 TUPLES]", ["src"]))
    assert ranged.execution is Execution.SEQUENTIAL
    assert _plan(("m", one_group, ["src"]), force=Execution.SEQUENTIAL).execution is Execution.SEQUENTIAL
