"""ServerContext without starting Spark: config reading and session settings."""
from __future__ import annotations

import sys

from sbpy.server.config import config_from_dict
from sbpy.server.context import ServerContext


def test_from_config(tmp_path):
    config = config_from_dict({"spark": {"master": "local[1]", "data_dir": "d",
                                         "conf": {"spark.sql.shuffle.partitions": 3, "x.flag": True}}},
                              tmp_path / "sensorbee.yaml")
    ctx = ServerContext.from_config(config)
    assert ctx.master == "local[1]" and ctx.data_dir == tmp_path / "d"
    conf = ctx.session_conf()
    assert conf["spark.sql.shuffle.partitions"] == "3" and conf["x.flag"] == "true"
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert "RocksDB" in conf["spark.sql.streaming.stateStore.providerClass"]
    assert not ctx.started
    ctx.close()


def test_defaults(tmp_path):
    ctx = ServerContext(data_dir=tmp_path)
    assert ctx.master == "local[*]" and ctx.session_conf()["spark.sql.shuffle.partitions"] == "2"
    assert ctx.session_conf()["spark.driver.memory"] == "2g"


def test_the_heap_default_gives_way_to_the_config(tmp_path):
    config = config_from_dict({"spark": {"conf": {"spark.driver.memory": "3g"}}}, tmp_path / "sensorbee.yaml")
    assert ServerContext.from_config(config).session_conf()["spark.driver.memory"] == "3g"


def test_workers_fork_from_sbpys_daemon_unless_the_config_says_otherwise(tmp_path):
    assert ServerContext(data_dir=tmp_path).session_conf()["spark.python.daemon.module"] == \
        "sbpy.bql.spark.worker_daemon"
    config = config_from_dict({"spark": {"conf": {"spark.python.daemon.module": "pyspark.daemon"}}},
                              tmp_path / "sensorbee.yaml")
    assert ServerContext.from_config(config).session_conf()["spark.python.daemon.module"] == "pyspark.daemon"


def test_the_jvms_compile_huge_methods_unless_the_config_says_otherwise(tmp_path):
    """Whole-stage code of a native chain with arithmetic passes HotSpot's 8,000-byte limit (server/spark_noise)."""
    conf = ServerContext(data_dir=tmp_path).session_conf()
    for key in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        assert "-XX:-DontCompileHugeMethods" in conf[key].split()
    assert "-Xss32m" in conf["spark.driver.extraJavaOptions"].split()
    config = config_from_dict({"spark": {"conf": {"spark.executor.extraJavaOptions": "-XX:+DontCompileHugeMethods -Dx=1",
                                                  "spark.driver.extraJavaOptions": "-Xss8m"}}},
                              tmp_path / "sensorbee.yaml")
    conf = ServerContext.from_config(config).session_conf()
    assert conf["spark.executor.extraJavaOptions"] == "-XX:+DontCompileHugeMethods -Dx=1"
    assert conf["spark.driver.extraJavaOptions"].split() == ["-Xss8m", "-XX:-DontCompileHugeMethods"]
