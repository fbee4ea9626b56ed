"""Shared helpers of the REST tests whose topologies run on the Spark-free local runner: a server with
topology ``t`` whose file sources and sinks may use ``tmp_path``, posting BQL to it, reading node
status, and running streams into file sinks to compare with the in-process runtime."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from local_runner import start_local
from sbpy.server.nodes.source_node import wait_until
from sbpy.server.topology import Topology


@contextmanager
def local_server(server_factory: Callable[..., Any], tmp_path: Path) -> Iterator[tuple[Any, httpx.Client]]:
    """A running server whose topologies run their queries on the local runner, files allowed under
    ``tmp_path``, with topology ``t`` created; yields the server and a client of it."""
    srv = server_factory({"storage": {"file_roots": [str(tmp_path)]}},
                         topology_factory=lambda name, ctx: Topology(name, ctx, query_starter=start_local))
    with srv.client() as c:
        assert c.post("/topologies", json={"name": "t"}).status_code == 200
        yield srv, c


def post(c: httpx.Client, script: str, topology: str = "t") -> httpx.Response:
    """The answer to running the BQL ``script`` on ``topology``."""
    return c.post(f"/topologies/{topology}/queries", json={"queries": script})


def post_ok(c: httpx.Client, script: str, topology: str = "t") -> None:
    """Run the BQL ``script`` on ``topology``; it must succeed."""
    r = post(c, script, topology)
    assert r.status_code == 200, r.text


def status(c: httpx.Client, kind: str, name: str, topology: str = "t") -> dict[str, Any]:
    """The status of node ``name`` of ``kind`` (source / stream / sink)."""
    return c.get(f"/topologies/{topology}/{kind}s/{name}").json()[kind]["status"]


def received(c: httpx.Client, sink: str) -> int:
    """How many tuples sink ``sink`` of topology ``t`` has received."""
    return status(c, "sink", sink)["input_stats"]["num_received_total"]


def empty_source(c: httpx.Client, tmp_path: Path) -> None:
    """Create the paused file source ``s`` over an empty file (for statements that only need ``s``)."""
    (tmp_path / "in.jsonl").write_text("")
    post_ok(c, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";')


def streams_into_files(c: httpx.Client, tmp_path: Path, rows: list[Any], queries: dict[str, str],
                       counts: dict[str, int]) -> dict[str, list[Any]]:
    """Feed ``rows`` through the file source ``s`` to one stream per ``queries`` entry (name → SELECT),
    each written to its own file sink; once sink ``name`` has received ``counts[name]`` tuples, drop the
    sinks (which closes their files) and return each file's rows by stream name."""
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = [f'CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl";']
    for name, query in queries.items():
        script += [f"CREATE STREAM x_{name} AS {query};",
                   f'CREATE SINK k_{name} TYPE file WITH path = "{tmp_path}/{name}.jsonl";',
                   f"INSERT INTO k_{name} FROM x_{name};"]
    post_ok(c, "\n".join(script + ["RESUME SOURCE s;"]))
    got = {name: 0 for name in queries}

    def all_received() -> bool:
        got.update({name: received(c, f"k_{name}") for name in queries})
        return all(got[name] >= counts[name] for name in queries)

    assert wait_until(all_received, 60), (got, counts)
    post_ok(c, " ".join(f"DROP SINK k_{name};" for name in queries))
    return {name: [json.loads(x) for x in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
            for name in queries}
