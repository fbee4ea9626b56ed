"""One registry shape for every plugin kind, global defaults and per-topology copies."""
from __future__ import annotations

import pytest

from sbpy.bql.errors import BQLExecutionError
from sbpy.bql.functions.registry import AlreadyRegisteredError, NotRegisteredError
from sbpy.plugins import PluginRegistries, SharedState, default_registries


class S(SharedState):
    pass


@pytest.mark.parametrize("kind,add,msg", [
    ("udf", lambda r: r.add_udf("f", lambda x: x), "function 'f' is already registered"),
    ("udsf", lambda r: r.add_udsf("u", lambda: None), "UDSF 'u' is already registered"),
    ("uds_type", lambda r: r.add_uds_type("s", S), "state type 's' is already registered"),
    ("source_type", lambda r: r.add_source_type("src", object), "source type 'src' is already registered"),
    ("sink_type", lambda r: r.add_sink_type("x", object), "sink type 'x' is already registered"),
])
def test_every_kind_same_shape(kind, add, msg):
    regs = PluginRegistries()
    add(regs)
    with pytest.raises(AlreadyRegisteredError, match=msg):
        add(regs)
    reg = regs.registry(kind)
    name = reg.names()[0] if kind in ("udf", "uds_type") else msg.split("'")[1]
    assert reg.lookup(name.upper()) is reg.lookup(name)
    assert name in reg.list()
    regs.unregister(kind, name.upper())
    with pytest.raises(NotRegisteredError, match="is not registered"):
        reg.lookup(name)


def test_builtins_are_taken_names():
    regs = PluginRegistries()
    with pytest.raises(AlreadyRegisteredError, match="sink type 'file' is already registered"):
        regs.add_sink_type("FILE", object)
    with pytest.raises(AlreadyRegisteredError, match="function 'abs' is already registered"):
        regs.add_udf("abs", lambda x: x)
    regs.add_udf("abs", lambda x: 42, replace=True)
    assert regs.for_topology("t").functions.lookup("abs").impl(-1) == 42


def test_unknown_names_suggest_close_matches():
    regs = PluginRegistries()
    with pytest.raises(NotRegisteredError, match=r"source type 'fil' is not registered \(did you mean 'file'\?\)"):
        regs.source_types.lookup("fil")


def test_invalid_names():
    regs = PluginRegistries()
    for bad in ("", "1abc", "a-b", "a b"):
        with pytest.raises(BQLExecutionError, match="not a valid identifier"):
            regs.add_udf(bad, lambda: 1)


def test_topology_copies_are_isolated():
    regs = PluginRegistries()
    regs.add_udf("f", lambda: 1)
    t1 = regs.for_topology("t1")
    regs.add_udf("g", lambda: 2)
    t2 = regs.for_topology("t2")
    assert "f" in t1.functions and "g" not in t1.functions and "g" in t2.functions
    t1.sink_types.register("only_t1", object)
    assert "only_t1" not in t2.sink_types and "only_t1" not in regs.sink_types
    assert "abs" in t1.functions  # built-in functions are part of every copy


def test_context_binding_and_late_states():
    regs = PluginRegistries()
    regs.add_udf("peek", lambda ctx, name: ctx.state(name))
    plugins = regs.for_topology("t")
    peek = plugins.functions.lookup("peek").impl
    with pytest.raises(BQLExecutionError, match="state 'x' was not found"):
        peek("x")
    plugins.bind_states({"x": 7})
    assert peek("x") == 7
    assert plugins.context.topology == "t"


def test_describe_and_default_registries():
    regs = PluginRegistries()
    regs.add_udf("f", lambda x: x)
    rows = regs.describe()
    assert {"kind": "sink_type", "name": "uds", "module": "builtin"} in rows
    assert any(r["kind"] == "udf" and r["name"] == "f" for r in rows)
    assert default_registries() is default_registries()


def test_uds_type_from_plain_function():
    regs = PluginRegistries()
    regs.add_uds_type("box", lambda params: dict(params))
    assert regs.uds_types.lookup("box").create({"a": 1}) == {"a": 1}
    with pytest.raises(TypeError):
        regs.add_uds_type("nothing", 42)
