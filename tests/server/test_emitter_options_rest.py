"""SensorBee's emitter options (``SELECT RSTREAM [EVERY 3-RD TUPLE LIMIT 4] ...``) through the REST API on
the Spark-free local runner: each stream's sink file holds the reference model's rows — the in-process
kernel's output for the same query without options, with the option applied to that list — and an
invalid option is refused with SensorBee's text (E0007)."""
from __future__ import annotations

import pytest
from rest_util import empty_source, local_server, post, streams_into_files
from sbpy.bql.runtime.testing import run_query

ROWS = [{"id": i, "kind": ("bid", "ask", "sell")[i % 3], "price": (i * 7) % 23} for i in range(40)]
PLAIN = {
    "every": "SELECT RSTREAM id, price FROM s [RANGE 2 TUPLES]",
    "limited": "SELECT ISTREAM kind, max(price) AS top FROM s [RANGE 5 TUPLES] GROUP BY kind",
}


@pytest.fixture
def local(server_factory, tmp_path):
    """A client of a local-runner server with topology ``t`` (rest_util.local_server)."""
    with local_server(server_factory, tmp_path) as (_, c):
        yield c


def test_streams_with_emitter_options_equal_the_model(local, tmp_path):
    every = run_query(PLAIN["every"], {"s": ROWS})[::3][:4]
    limited = run_query(PLAIN["limited"], {"s": ROWS})[:5]
    queries = {"every": PLAIN["every"].replace("RSTREAM", "RSTREAM [EVERY 3-RD TUPLE LIMIT 4]"),
               "limited": PLAIN["limited"].replace("ISTREAM", "ISTREAM [LIMIT 5]")}
    got = streams_into_files(local, tmp_path, ROWS, queries, {"every": len(every), "limited": len(limited)})
    assert got == {"every": every, "limited": limited}


def test_an_invalid_option_is_refused_with_sensorbee_text(local, tmp_path):
    empty_source(local, tmp_path)
    r = post(local, "CREATE STREAM x AS SELECT RSTREAM [SAMPLE 120%] id FROM s [RANGE 1 TUPLES];")
    err = r.json()["error"]
    assert r.status_code == 400 and err["code"] == "E0007"
    assert err["meta"]["error"] == "SAMPLE parameter must have a value between 0 and 100, not %!d(float64=120)"
