"""schemathesis against the server's own OpenAPI schema (issue 12): every operation of
``/openapi.json`` is called with generated valid and invalid inputs (a bounded number of examples per
operation, on a loopback server in a thread); no answer may be a 5xx, and where the schema documents a
status code its body must match that response's schema and content type.

The server is the default app, except that topologies run their queries with the in-process runner
(``local_runner.start_local``): a generated script that happens to create a stream must not start Spark.
The two server-sent-event feeds (``/console/events`` and ``/topologies/{t}/select``) stream until the
client leaves, so they are not called here (tests/server/test_console_feed.py and test_rest_queries.py
cover them). A fixed Hypothesis seed keeps CI runs the same; ``SBPY_SCHEMATHESIS_EXAMPLES`` raises the
number of examples per operation for a longer run.
"""
from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from local_runner import start_local
from sbpy.server.config import config_from_dict
from sbpy.server.topology import Topology
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from server_harness import start_server

EXAMPLES = int(os.environ.get("SBPY_SCHEMATHESIS_EXAMPLES", "25"))
STREAMING = r"/(console/events|topologies/\{topology_name\}/select)$"


def _local_topology(name: str, ctx):
    return Topology(name, ctx, query_starter=start_local)


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory):
    running = start_server(config_from_dict({}), tmp_path_factory.mktemp("data"), _local_topology)
    try:
        yield schemathesis.openapi.from_url(running.url + "openapi.json").exclude(path_regex=STREAMING)
    finally:
        running.stop()


def _documented(case, response) -> bool:
    """The schema documents this status code for the operation (or a default answer)."""
    responses = case.operation.definition.raw.get("responses", {})
    return str(response.status_code) in responses or "default" in responses


def _fuzz(operation, counts: dict[str, int]) -> None:
    """``EXAMPLES`` generated calls of ``operation`` (valid and invalid inputs), checked."""

    @given(case=operation.as_strategy())
    @seed(12)
    @settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def run(case):
        response = case.call(timeout=30)
        counts["cases"] += 1
        counts["5xx"] += response.status_code >= 500
        assert response.status_code < 500, (f"{case.method} {case.formatted_path} -> {response.status_code}: "
                                            f"{response.text[:500]}\n{case.as_curl_command()}")
        if _documented(case, response):
            counts["checked"] += 1
            case.validate_response(response, checks=[status_code_conformance, content_type_conformance,
                                                     response_schema_conformance])

    run()


def test_api_never_answers_5xx_and_matches_its_schema(api_schema):
    operations = [r.ok() for r in api_schema.get_all_operations()]
    paths = {op.path for op in operations}
    # the schema is the server's (not a vacuous pass): its main operations are there
    assert {"/api/v1/topologies", "/api/v1/topologies/{topology_name}/queries", "/api/v1/runtime_status"} <= paths
    counts = {"cases": 0, "checked": 0, "5xx": 0}
    for operation in operations:
        _fuzz(operation, counts)
    print(f"schemathesis: {len(operations)} operations, {counts['cases']} cases, {counts['checked']} with a "
          f"documented status checked against the schema, {counts['5xx']} server errors")
    assert counts["cases"] >= len(operations) and counts["5xx"] == 0
