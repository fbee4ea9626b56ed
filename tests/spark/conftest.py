"""One SparkSession for the whole test run (startup costs 5–9 s), and no query outlives its test."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def server_context(tmp_path_factory):
    """The shared ``ServerContext`` (its session is created on first ``spark()``)."""
    from sbpy.server.context import ServerContext

    ctx = ServerContext(data_dir=tmp_path_factory.mktemp("sbpy-data"), master="local[2]")
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def spark(server_context):
    """The shared SparkSession (with ``sbpy_journal`` registered)."""
    return server_context.spark()


@pytest.fixture(autouse=True)
def _stop_queries(request):
    """Stop every active streaming query after each test that used Spark."""
    yield
    if "spark" not in request.fixturenames and "server_context" not in request.fixturenames:
        return
    session = request.getfixturevalue("spark")
    for query in session.streams.active:
        query.stop()
