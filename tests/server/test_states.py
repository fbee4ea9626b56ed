"""CREATE / DROP / SAVE / LOAD / UPDATE STATE through ``StateManager``."""
from __future__ import annotations

import pytest

from sbpy.bql.errors import BQLExecutionError
from sbpy.bql.parser import parse_one
from sbpy.plugins import PluginRegistries, SharedState
from sbpy.plugins.examples import counter, jubatus
from sbpy.server.states import StateManager
from sbpy.server.uds_storage import FsStorage, InMemoryStorage


class NoLoad(SharedState):
    """Saves but has no load_state."""

    def save(self, w, params):
        w.write(b"x")


class Replaceable(SharedState):
    """load_state only (no in-place load); records terminations."""

    terminated: list = []

    def __init__(self, v=0):
        self.v = v

    def save(self, w, params):
        w.write(str(self.v).encode())

    @classmethod
    def load_state(cls, r, params):
        return cls(int(r.read()) + params.get("bump", 0))

    def update(self, params):
        self.v = params["v"]

    def terminate(self):
        Replaceable.terminated.append(self.v)


class Broken(SharedState):
    def __init__(self):
        raise RuntimeError("kaput")


@pytest.fixture
def regs():
    r = PluginRegistries()
    counter.register(r)
    jubatus.register(r)
    r.add_uds_type("noload", NoLoad)
    r.add_uds_type("replaceable", Replaceable)
    r.add_uds_type("broken", Broken)
    return r


@pytest.fixture
def states(regs):
    return StateManager("topo", InMemoryStorage(), regs)


def run(states, text):
    states.execute(parse_one(text))


def test_create_get_drop(states):
    run(states, "CREATE STATE c TYPE my_counter WITH start = 100")
    assert states.get("C").next() == 100
    assert states.names() == ["c"] and states.list() == [{"name": "c", "type": "my_counter"}]
    with pytest.raises(BQLExecutionError, match="state 'c' already exists"):
        run(states, "CREATE STATE c TYPE my_counter")
    run(states, "DROP STATE c")
    with pytest.raises(BQLExecutionError, match="state 'c' was not found"):
        states.get("c")
    with pytest.raises(BQLExecutionError, match="state 'c' was not found"):
        run(states, "DROP STATE c")


@pytest.mark.parametrize("text,msg", [
    ("CREATE STATE s TYPE nope", "state type 'nope' is not registered"),
    ("CREATE STATE s TYPE broken", "cannot create state 's': kaput"),
    ("CREATE STATE s TYPE my_counter WITH start = \"x\"", "cannot create state 's': cannot convert string"),
    ("CREATE STATE s TYPE jubaclassifier_arow", "cannot create state 's': .*label_field"),
    ("SAVE STATE s", "state 's' was not found"),
    ("LOAD STATE s TYPE my_counter", "state 's' was not saved with tag 'default'"),
    ("LOAD STATE s TYPE noload OR CREATE IF NOT SAVED", "state type 'noload' does not support LOAD STATE"),
    ("SAVE STATE s TAG x", "state 's' was not found"),
])
def test_statement_errors(states, text, msg):
    with pytest.raises(BQLExecutionError, match=msg) as info:
        run(states, text)
    assert info.value.span is not None


def test_save_and_load_default_and_tags(states):
    run(states, "CREATE STATE c TYPE my_counter")
    states.get("c").next()
    run(states, "SAVE STATE c")  # tag default
    states.get("c").next()
    run(states, "SAVE STATE c TAG Trained")
    assert states.storage.list("topo") == {"c": ["default", "trained"]}
    inst = states.get("c")
    run(states, "LOAD STATE c TYPE my_counter")  # in-place load keeps the instance
    assert states.get("c") is inst and inst.next() == 2
    run(states, "LOAD STATE c TYPE my_counter TAG trained")
    assert states.get("c").next() == 3


def test_load_type_must_match(states):
    run(states, "CREATE STATE c TYPE my_counter")
    run(states, "SAVE STATE c")
    with pytest.raises(BQLExecutionError, match="state 'c' has type 'my_counter', not 'replaceable'"):
        run(states, "LOAD STATE c TYPE replaceable")


def test_load_replaces_and_terminates_old_instance(states):
    Replaceable.terminated.clear()
    run(states, "CREATE STATE r TYPE replaceable WITH v = 5")
    run(states, "SAVE STATE r")
    old = states.get("r")
    run(states, "LOAD STATE r TYPE replaceable SET bump = 1")
    assert states.get("r") is not old and states.get("r").v == 6
    assert Replaceable.terminated == [5]


def test_load_into_a_new_name_uses_load_state(states):
    run(states, "CREATE STATE c TYPE my_counter WITH start = 10")
    run(states, "SAVE STATE c")
    run(states, "DROP STATE c")
    run(states, "LOAD STATE c TYPE my_counter")
    assert states.get("c").next() == 10


def test_or_create_if_not_saved(states):
    run(states, 'LOAD STATE m TYPE jubaclassifier_arow OR CREATE IF NOT SAVED '
                'WITH label_field = "age", regularization_weight = 0.001')
    assert states.get("m").label_field == "age" and states.get("m").c == 0.001
    run(states, "SAVE STATE m")
    states.get("m").label_field = "changed"
    run(states, 'LOAD STATE m TYPE jubaclassifier_arow OR CREATE IF NOT SAVED WITH label_field = "x"')
    assert states.get("m").label_field == "age"  # it was saved: loaded, not created


def test_save_unsupported_and_failing_save_keeps_old(states):
    run(states, "CREATE STATE b TYPE replaceable WITH v = 1")
    run(states, "SAVE STATE b")
    states.get("b").save = lambda w, p: (w.write(b"99"), 1 / 0)
    with pytest.raises(BQLExecutionError, match="cannot save state 'b': division by zero"):
        run(states, "SAVE STATE b")
    assert states.storage.load("topo", "b", "default").read() == b"1"
    states.types.register("plain", type("Plain", (), {"create": staticmethod(lambda params: object())}))
    run(states, "CREATE STATE p TYPE plain")
    with pytest.raises(BQLExecutionError, match="state 'p' does not support saving"):
        run(states, "SAVE STATE p")


def test_update_state(states):
    run(states, "CREATE STATE r TYPE replaceable")
    run(states, "UPDATE STATE r SET v = 3")
    assert states.get("r").v == 3
    run(states, "CREATE STATE c TYPE my_counter")
    with pytest.raises(BQLExecutionError, match="state 'c' cannot be updated"):
        run(states, "UPDATE STATE c SET v = 3")


def test_close_terminates_everything(states):
    Replaceable.terminated.clear()
    run(states, "CREATE STATE a TYPE replaceable WITH v = 1")
    run(states, "CREATE STATE b TYPE replaceable WITH v = 2")
    states.close()
    assert sorted(Replaceable.terminated) == [1, 2] and states.names() == []


def test_fs_storage_survives_a_new_manager(regs, tmp_path):
    storage = FsStorage(tmp_path / "uds")
    first = StateManager("topo", storage, regs)
    run(first, "CREATE STATE c TYPE my_counter WITH start = 7")
    run(first, "SAVE STATE c")
    assert (tmp_path / "uds" / "topo-c-default.state").exists()
    second = StateManager("topo", FsStorage(tmp_path / "uds"), regs)
    run(second, "LOAD STATE c TYPE my_counter")
    assert second.get("c").next() == 7


def test_save_all(states):
    run(states, "CREATE STATE c TYPE my_counter")
    run(states, "CREATE STATE r TYPE replaceable WITH v = 4")
    states.types.register("plain", type("Plain", (), {"create": staticmethod(lambda params: object())}))
    run(states, "CREATE STATE p TYPE plain")
    assert states.save_all("final") == ["c", "r"]
    assert states.storage.list("topo") == {"c": ["final"], "r": ["final"]}
