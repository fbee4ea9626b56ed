"""Config loading and validation (server/config.py)."""
from __future__ import annotations

import pytest

from sbpy.server.config import ConfigError, config_from_dict, load_config


def test_defaults_without_a_file():
    config = load_config(None, env={})
    assert config.network.listen_on == "127.0.0.1:15601"
    assert (config.network.host, config.network.port) == ("127.0.0.1", 15601)
    assert config.logging.target == "stderr" and config.logging.min_log_level == "info"
    assert config.storage.uds.type == "in_memory"
    assert config.spark.master == "local[*]" and config.topologies == {}


def test_env_var_and_relative_paths(tmp_path):
    file = tmp_path / "sb.yaml"
    file.write_text("topologies:\n  a:\n  b:\n    bql_file: b.bql\nspark:\n  conf:\n    spark.x: 1\n")
    config = load_config(None, env={"SENSORBEE_CONFIG": str(file)})
    assert config.bql_file("a") is None
    assert config.bql_file("b") == tmp_path / "b.bql"
    assert config.data_dir == tmp_path / "data"
    assert config.spark.conf == {"spark.x": 1}
    assert load_config(file).source_path == file


@pytest.mark.parametrize("data, message", [
    ({"network": {"listen_onn": ":1"}}, "unknown key 'listen_onn' in section 'network'"),
    ({"colour": 1}, "unknown key 'colour' at the top level"),
    ({"storage": {"uds": {"type": "fs", "params": {"dirr": "x"}}}},
     "unknown key 'dirr' in section 'storage.uds.params'"),
    ({"topologies": {"t": {"bql": "x"}}}, "unknown key 'bql' in section 'topologies.t'"),
    ({"storage": {"uds": {"type": "fs"}}}, "params.dir is required for the 'fs' storage"),
    ({"logging": {"min_log_level": "loud"}}, "logging.min_log_level"),
    ({"network": {"listen_on": "nowhere"}}, "listen_on must look like 'host:port'"),
    ({"topologies": {"1t": None}}, "'1t' is not a valid topology name"),
    ({"topologies": {"from": None}}, "'from' is not a valid topology name"),
    ({"topologies": {"a": None, "A": None}}, "topology 'A' is listed twice"),
])
def test_invalid_configs(data, message):
    with pytest.raises(ConfigError) as exc:
        config_from_dict(data)
    assert message in str(exc.value)


def test_listen_on_all_interfaces_form():
    config = config_from_dict({"network": {"listen_on": ":15601"}, "logging": {"min_log_level": "warn"}})
    assert (config.network.host, config.network.port) == ("0.0.0.0", 15601)
    assert config.logging.level == 30


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("- 1\n")
    with pytest.raises(ConfigError, match="must be a YAML mapping"):
        load_config(bad)
