"""Safe defaults of the REST server (issue 12): no state change from foreign web pages (Origin,
non-JSON bodies), no answer to foreign Host names (DNS rebinding), a request size limit, and a loud
warning when the server is reachable beyond loopback without a token. Every refusal uses the error
envelope."""
from __future__ import annotations

import logging

import httpx
import pytest

from sbpy.server.config import DEFAULT_MAX_REQUEST_BYTES, config_from_dict

EVIL = "http://evil.example"


def _error(r: httpx.Response, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    err = r.json()["error"]
    assert err["code"] == code and err["request_id"] and err["message"], err
    return err


def _topologies(c: httpx.Client) -> list[str]:
    return [t["name"] for t in c.get("/topologies").json()["topologies"]]


def _port(server) -> int:
    return int(server.url.rstrip("/").rsplit(":", 1)[1])


# ---------------------------------------------------------------- cross-origin requests


def test_a_foreign_page_cannot_create_a_topology(server):
    with server.client() as c:
        # what a page of evil.example can send without a CORS preflight
        r = c.post("/topologies", content=b'{"name": "evil"}',
                   headers={"Origin": EVIL, "Content-Type": "text/plain;charset=UTF-8"})
        err = _error(r, 403, "J0006")
        assert err["message"] == ("Requests from the web origin 'http://evil.example' are not allowed; "
                                  "add it to network.allowed_origins in the server config to allow it.")
        assert err["meta"] == {"origin": EVIL}
        # JSON from a foreign origin, a DELETE, and the sandboxed 'null' origin are refused too
        _error(c.post("/topologies", json={"name": "evil"}, headers={"Origin": EVIL}), 403, "J0006")
        _error(c.post("/topologies", json={"name": "evil"}, headers={"Origin": "null"}), 403, "J0006")
        assert c.post("/topologies", json={"name": "mine"}).status_code == 200
        _error(c.delete("/topologies/mine", headers={"Origin": EVIL}), 403, "J0006")
        # another port of localhost is another origin
        _error(c.post("/topologies", json={"name": "x"}, headers={"Origin": "http://localhost:1"}), 403, "J0006")
        assert _topologies(c) == ["mine"]
        # reading is not state-changing: a foreign Origin may GET (the browser hides the answer)
        assert c.get("/topologies", headers={"Origin": EVIL}).status_code == 200


def test_the_servers_own_origins_are_allowed(server):
    port = _port(server)
    with server.client() as c:
        for i, origin in enumerate((f"http://127.0.0.1:{port}", f"http://localhost:{port}",
                                    f"http://[::1]:{port}/")):
            r = c.post("/topologies", json={"name": f"t{i}"}, headers={"Origin": origin})
            assert r.status_code == 200, (origin, r.text)


def test_allowed_origins_from_the_config(server_factory):
    server = server_factory({"network": {"allowed_origins": ["https://dash.example"]}})
    with server.client() as c:
        r = c.post("/topologies", json={"name": "t"}, headers={"Origin": "https://DASH.example/"})
        assert r.status_code == 200, r.text
        _error(c.post("/topologies", json={"name": "u"}, headers={"Origin": EVIL}), 403, "J0006")


# ---------------------------------------------------------------- non-JSON bodies


def test_state_changing_bodies_must_be_json(server):
    with server.client() as c:
        for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            r = c.post("/topologies", content=b'{"name": "t"}', headers={"Content-Type": ctype})
            err = _error(r, 415, "J0007")
            assert err["message"].startswith("The request body must be JSON sent with "
                                             "'Content-Type: application/json'"), err
        err = _error(c.post("/topologies", content=b'{"name": "t"}'), 415, "J0007")
        assert err["message"].endswith("(got no Content-Type).")
        assert _topologies(c) == []
        r = c.post("/topologies", content=b'{"name": "t"}',
                   headers={"Content-Type": "application/json; charset=utf-8"})
        assert r.status_code == 200, r.text
        assert c.delete("/topologies/t").status_code == 200  # no body, no Content-Type needed


# ---------------------------------------------------------------- Host names


def test_a_foreign_host_name_is_refused(server):
    port = _port(server)
    with server.client() as c:
        err = _error(c.get("/topologies", headers={"Host": f"evil.example:{port}"}), 400, "J0008")
        assert err["message"] == ("The server does not answer to the host name 'evil.example'; add it to "
                                  "network.allowed_hosts in the server config to allow it.")
        _error(c.post("/topologies", json={"name": "t"}, headers={"Host": "rebound.evil.example"}), 400, "J0008")
        assert _topologies(c) == []
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST."):
            assert c.get("/topologies", headers={"Host": host}).status_code == 200, host


def test_allowed_hosts_from_the_config(server_factory):
    listed = server_factory({"network": {"allowed_hosts": ["sbpy.example"]}})
    with listed.client() as c:
        assert c.get("/topologies", headers={"Host": "sbpy.example:15601"}).status_code == 200
        _error(c.get("/topologies", headers={"Host": "evil.example"}), 400, "J0008")
    anything = server_factory({"network": {"allowed_hosts": ["*"]}})
    with anything.client() as c:
        assert c.get("/topologies", headers={"Host": "evil.example"}).status_code == 200


# ---------------------------------------------------------------- body size


def test_bodies_over_the_limit_get_413(server_factory):
    assert config_from_dict({}).network.max_request_bytes == DEFAULT_MAX_REQUEST_BYTES == 16 * 1024 * 1024
    server = server_factory({"network": {"max_request_bytes": 1000}})
    big = b'{"queries": "' + b" " * 2000 + b'EVAL 1;"}'
    with server.client() as c:
        assert c.post("/topologies", json={"name": "t"}).status_code == 200
        r = c.post("/topologies/t/queries", content=big, headers={"Content-Type": "application/json"})
        err = _error(r, 413, "J0009")
        assert err["message"] == "The request body is larger than 1000 bytes (network.max_request_bytes)."
        assert err["meta"] == {"limit": 1000}

        def chunks():  # no Content-Length: the server counts what streams in
            yield b'{"queries": "'
            for _ in range(20):
                yield b" " * 100
            yield b'EVAL 1;"}'

        r = c.post("/topologies/t/queries", content=chunks(), headers={"Content-Type": "application/json"})
        _error(r, 413, "J0009")
    with server.client() as c:
        r = c.post("/topologies/t/queries", json={"queries": "EVAL 1 + 1;"})
        assert r.status_code == 200 and r.json() == {"result": 2}, r.text


def test_config_rejects_bad_values():
    from sbpy.server.config import ConfigError

    for bad, words in (({"max_request_bytes": 0}, "network.max_request_bytes"),
                       ({"allowed_hosts": "localhost"}, "network.allowed_hosts"),
                       ({"allowed_origins": [""]}, "network.allowed_origins")):
        with pytest.raises(ConfigError, match=words):
            config_from_dict({"network": bad})


# ---------------------------------------------------------------- exposure warning


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "auth_token" in r.getMessage()]


def test_non_loopback_bind_without_token_warns_once(server_factory, caplog):
    caplog.set_level(logging.WARNING)
    server_factory({"network": {"listen_on": ":15999"}})
    (warning,) = _warnings(caplog)
    assert warning.startswith("SECURITY: the server listens on ':15999' (beyond loopback) and "
                              "network.auth_token is not set")
    caplog.clear()
    server_factory({"network": {"listen_on": "0.0.0.0:15999", "auth_token": "s3cret"}})
    server_factory({"network": {"listen_on": "localhost:15999"}})
    assert _warnings(caplog) == []


# ---------------------------------------------------------------- hostile BQL over REST


@pytest.mark.parametrize("text", ["EVAL " + "[" * 600 + "]" * 600 + ";", "EVAL 1" + " + 1" * 3000 + ";",
                                  "EVAL " + "7" * 5000 + ";"], ids=["nested", "chain", "5000 digits"])
def test_hostile_bql_is_a_parse_error_not_a_crash(server, text):
    with server.client() as c:
        assert c.post("/topologies", json={"name": "t"}).status_code == 200
        err = _error(c.post("/topologies/t/queries", json={"queries": text}), 400, "E0006")
        assert err["message"] == "Cannot parse a BQL statement"
        assert err["meta"]["parse_errors"][0].startswith("statement has a syntax error near line 1")
