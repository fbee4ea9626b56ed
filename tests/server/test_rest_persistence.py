"""Persistence through the server lifespan: a topology built over REST is back after a restart on the
same data dir; a topology of the config wins over a persisted one of the same name. No Spark: no
consumer is attached (a paused source and a stream)."""
from __future__ import annotations

import json

from server_harness import start_server

from sbpy.server.config import config_from_dict


def _nodes(client, topology: str, kind: str) -> list[tuple[str, str]]:
    r = client.get(f"/topologies/{topology}/{kind}s")
    assert r.status_code == 200, r.text
    return sorted((n["name"], n["state"]) for n in r.json()[f"{kind}s"])


def test_topology_survives_restart(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"a": i}) + "\n" for i in range(3)))
    data = tmp_path / "data"
    cfg = config_from_dict({}, tmp_path / "sensorbee.yaml")  # the source file lies under its folder (a file root)
    srv = start_server(cfg, data)
    try:
        with srv.client() as c:
            assert c.post("/topologies", json={"name": "keep"}).status_code == 200
            r = c.post("/topologies/keep/queries", json={"queries": f"""
                CREATE PAUSED SOURCE s TYPE file WITH path = "{src}";
                CREATE STREAM st AS SELECT RSTREAM a FROM s [RANGE 1 TUPLES];"""})
            assert r.status_code == 200, r.text
            assert c.post("/topologies", json={"name": "gone"}).status_code == 200
            assert c.delete("/topologies/gone").status_code == 200
    finally:
        srv.stop()
    assert "CREATE STREAM st" in (data / "topologies/keep/statements.bql").read_text()
    assert not (data / "topologies/gone").exists()

    srv = start_server(cfg, data)
    try:
        with srv.client() as c:
            assert c.get("/topologies").json() == {"topologies": [{"name": "keep"}]}
            assert _nodes(c, "keep", "source") == [("s", "paused")]
            assert _nodes(c, "keep", "stream") == [("st", "running")]
            # still persisted after the restore, and new statements are appended
            r = c.post("/topologies/keep/queries", json={"queries": "CREATE SINK k TYPE stdout;"})
            assert r.status_code == 200, r.text
    finally:
        srv.stop()
    text = (data / "topologies/keep/statements.bql").read_text()
    assert text.count("CREATE STREAM st") == 1 and "CREATE SINK k TYPE stdout" in text


def test_config_topology_wins_over_persisted(tmp_path):
    data = tmp_path / "data"
    srv = start_server(config_from_dict({}), data)
    try:
        with srv.client() as c:
            c.post("/topologies", json={"name": "t"})
            r = c.post("/topologies/t/queries", json={"queries": "CREATE SINK earlier TYPE stdout;"})
            assert r.status_code == 200, r.text
    finally:
        srv.stop()
    (tmp_path / "t.bql").write_text("CREATE SINK fresh TYPE stdout;\n")
    cfg = config_from_dict({"topologies": {"t": {"bql_file": "t.bql"}}}, tmp_path / "sb.yaml")
    srv = start_server(cfg, data)
    try:
        with srv.client() as c:
            assert c.get("/topologies").json() == {"topologies": [{"name": "t"}]}
            assert _nodes(c, "t", "sink") == [("fresh", "running")]
    finally:
        srv.stop()
