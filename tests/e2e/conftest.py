"""A shared ServerContext for the end-to-end runtime tests (one SparkSession per test run)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def server_context(tmp_path_factory):
    from sbpy.server.context import ServerContext

    ctx = ServerContext(data_dir=tmp_path_factory.mktemp("sbpy-e2e"), master="local[2]")
    yield ctx
    ctx.close()
