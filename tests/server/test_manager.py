"""TopologyManager: names, hooks, startup from the config's topologies."""
from __future__ import annotations

import pytest

from sbpy.server.config import config_from_dict
from sbpy.server.manager import (
    InvalidNameError,
    StartupError,
    TopologyExistsError,
    TopologyManager,
    TopologyNotFoundError,
)
from sbpy.server.topology import Topology


class Recording(Topology):
    def __init__(self, name, context=None):
        super().__init__(name, context)
        self.applied, self.stopped = [], False

    def execute(self, parsed):
        self.applied.append(parsed.text)
        return {}

    def stop(self):
        self.stopped = True


def test_names_are_case_insensitive():
    m = TopologyManager(None, Recording)
    t = m.create("Abc")
    assert m.get("ABC") is t and [x.name for x in m.list()] == ["Abc"]
    with pytest.raises(TopologyExistsError):
        m.create("abc")
    with pytest.raises(InvalidNameError):
        m.create("9x")
    assert m.delete("aBc") and t.stopped
    with pytest.raises(TopologyNotFoundError):
        m.get("abc")
    assert m.delete("abc")  # missing is fine


def test_hooks_see_creations_statements_and_drops():
    m = TopologyManager(None, Recording)
    seen = []
    m.hooks.topology_created = lambda n: seen.append(("created", n))
    m.hooks.statement_applied = lambda n, p, r: seen.append(("applied", n, p.text))
    m.hooks.topology_dropped = lambda n: seen.append(("dropped", n))
    t = m.create("t")
    m.run_script(t, "CREATE SOURCE s TYPE dummy;")
    m.delete("t")
    assert seen == [("created", "t"), ("applied", "t", "CREATE SOURCE s TYPE dummy"), ("dropped", "t")]


def test_load_from_config(tmp_path):
    (tmp_path / "a.bql").write_text("CREATE SOURCE s TYPE dummy;\nCREATE SINK k TYPE stdout;\n")
    file = tmp_path / "sb.yaml"
    config = config_from_dict({"topologies": {"a": {"bql_file": "a.bql"}, "empty": None}}, file)
    m = TopologyManager(None, Recording)
    m.load_from_config(config)
    assert sorted(t.name for t in m.list()) == ["a", "empty"]
    assert m.get("a").applied == ["CREATE SOURCE s TYPE dummy", "CREATE SINK k TYPE stdout"]


def test_a_failing_bql_file_aborts_startup_with_its_line(tmp_path):
    (tmp_path / "a.bql").write_text("CREATE SOURCE s TYPE dummy;\n\nCREATE SOURCE from TYPE dummy;\n")
    config = config_from_dict({"topologies": {"a": {"bql_file": "a.bql"}}}, tmp_path / "sb.yaml")
    with pytest.raises(StartupError, match="statement at line 3 failed: 'from' is a reserved word"):
        TopologyManager(None, Recording).load_from_config(config)
    (tmp_path / "a.bql").write_text("CREATE SOURCE s TYPE dummy;\nCREATE SOURCE ;\n")
    with pytest.raises(StartupError, match="syntax error near line 2"):
        TopologyManager(None, Recording).load_from_config(config)
    (tmp_path / "a.bql").unlink()
    with pytest.raises(StartupError, match="cannot read"):
        TopologyManager(None, Recording).load_from_config(config)
