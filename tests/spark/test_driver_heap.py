"""The server's JVM gets the heap of ``spark.driver.memory`` (sbpy's default 2g, not Spark's 1g).

In local mode every task runs in the driver JVM, so its heap is the engine's; the setting only counts if
PySpark passes it on when it launches the JVM. Checked on the test run's shared session, which a
``ServerContext`` with the default settings started.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_the_jvm_runs_with_the_default_heap(spark, server_context):
    assert server_context.session_conf()["spark.driver.memory"] == "2g"
    max_heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
    assert max_heap > 1.5 * 2**30, max_heap  # Spark's own default (1g) gives ~1 GiB
