"""The ``http`` source over REST (``POST .../sources/{s}/tuples``) and SELECT as Server-Sent Events
(``GET .../select?q=``), on a real server on loopback whose topologies run the local query runner.
References: the ``file`` source (same lines, same tuples, same drop errors) and the multipart SELECT
answer (same tuples, same JSON)."""
from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from rest_util import local_server, post_ok, status
from sbpy.plugins.builtin.http_source import HttpSource, IngestRefused
from sbpy.plugins.builtin.sources import FileSource
from sbpy.server.cli.client import iter_multipart
from sbpy.server.nodes.source_node import wait_until

JSON = {"Content-Type": "application/json"}
STREAM = "CREATE STREAM x AS SELECT RSTREAM id, v / 2 AS half, name FROM s [RANGE 1 TUPLES] WHERE id % 4 != 3;"


@pytest.fixture
def local(server_factory, tmp_path):
    """A server running queries on the local runner, files allowed under tmp_path; topology ``t``."""
    with local_server(server_factory, tmp_path) as (srv, c):
        yield srv, c


def lines_of(rows: list[Any], bad: dict[int, str]) -> list[bytes]:
    """JSON lines of ``rows`` with the ``bad`` lines inserted before row ``i``."""
    out = []
    for i, r in enumerate(rows):
        if i in bad:
            out.append(bad[i].encode())
        out.append(json.dumps(r).encode())
    return out


def file_errors(tmp_path, body: bytes) -> list[str]:
    """The file source's drop errors for ``body`` as a file, in the http source's wording."""
    path = tmp_path / "errors.jsonl"
    path.write_bytes(body)
    prefix = f"file source: {path}:"
    return [e.replace(prefix, "http source: line ", 1) for _, _, e in FileSource({"path": str(path)})._lines(None)
            if e is not None]


# ---------------------------------------------------------------- parsing against the file source

line = hs.one_of(
    hs.dictionaries(hs.text(max_size=4), hs.integers() | hs.floats(allow_nan=False) | hs.text(max_size=4),
                    max_size=3).map(json.dumps),
    hs.lists(hs.integers(), max_size=2).map(json.dumps),
    hs.text(max_size=6).filter(lambda t: "\n" not in t and "\r" not in t),
)


@settings(max_examples=150, deadline=None)
@given(hs.lists(line, max_size=8))
def test_a_body_parses_as_the_file_source_reads_the_same_file(tmp_path_factory, lines):
    body = "".join(x + "\n" for x in lines).encode()
    path = tmp_path_factory.mktemp("p") / "in.jsonl"
    path.write_bytes(body)
    ref = list(FileSource({"path": str(path)})._lines(None))
    batch = HttpSource({}).parse(body)
    assert [d for d, _ in batch.tuples] == [d for _, d, e in ref if e is None]
    assert batch.errors == [e.replace(f"file source: {path}:", "http source: line ", 1) for _, _, e in ref if e]


def test_parameters_and_a_stopped_source_refuses():
    for params, message in (({"max_queued": 0}, "max_queued must be a positive integer"),
                            ({"ack_timeout": "later"}, "ack_timeout must be a duration"),
                            ({"timestamp_field": ""}, "timestamp_field must be a non-empty string")):
        with pytest.raises(ValueError, match=message):
            HttpSource(params)
    source = HttpSource({})
    source.stop_accepting()
    with pytest.raises(IngestRefused, match="the source is stopped"):
        source.offer(b'{"a": 1}')


# ---------------------------------------------------------------- over REST


def test_posted_lines_flow_like_the_same_file(local, tmp_path):
    srv, c = local
    rows = [{"id": i, "v": [i, i / 4, None][i % 3], "name": f"é\"{i}"} for i in range(30)]
    bad = {4: "{broken", 11: "[1, 2]", 25: "17"}
    lines = lines_of(rows, bad)
    (tmp_path / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert c.post("/topologies", json={"name": "ref"}).status_code == 200
    post_ok(c, f"""CREATE PAUSED SOURCE s TYPE file WITH path = "{tmp_path}/in.jsonl"; {STREAM}
                CREATE SINK k TYPE file WITH path = "{tmp_path}/ref.jsonl"; INSERT INTO k FROM x;
                RESUME SOURCE s;""", "ref")
    assert wait_until(lambda: status(c, "stream", "x", "ref")["state"] == "stopped", 30)
    expected = (tmp_path / "ref.jsonl").read_bytes()

    dropped: list[dict[str, Any]] = []
    srv.app.state.manager.get("t").subscribe_dropped(dropped.append)
    post_ok(c, f"""CREATE SOURCE s TYPE http; {STREAM}
                CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl"; INSERT INTO k FROM x;""")
    answers, errors = [], []
    for chunk in (lines[:10], lines[10:11], lines[11:]):  # three requests, in order
        body = b"\n".join(chunk) + b"\n"
        r = c.post("/topologies/t/sources/s/tuples", content=body, headers=JSON)
        assert r.status_code == 200, r.text
        answers.append(r.json())
        errors += file_errors(tmp_path, body)
    assert sum(a["accepted"] for a in answers) == len(rows)
    assert [e for a in answers for e in a["errors"]] == errors and len(errors) == len(bad)
    assert wait_until(lambda: (tmp_path / "out.jsonl").read_bytes() == expected, 30)
    assert [(d["node_name"], d["error"]) for d in dropped] == [("s", e) for e in errors]
    source = status(c, "source", "s")
    assert source["output_stats"]["num_sent_total"] == len(rows)
    assert source["source"] == {"num_received": len(rows), "num_queued": 0, "num_dropped": len(bad)}


def test_a_paused_source_queues_then_journals_on_resume(local, tmp_path):
    _srv, c = local
    post_ok(c, f"""CREATE PAUSED SOURCE s TYPE http WITH ack_timeout = "50ms", max_queued = 3;
                CREATE STREAM x AS SELECT RSTREAM * FROM s [RANGE 1 TUPLES];
                CREATE SINK k TYPE file WITH path = "{tmp_path}/out.jsonl"; INSERT INTO k FROM x;""")
    r = c.post("/topologies/t/sources/s/tuples", content=b'{"a": 1}\n{"a": 2.0}\n', headers=JSON)
    assert (r.status_code, r.json()) == (202, {"queued": 2, "dropped": 0, "errors": []})
    r = c.post("/topologies/t/sources/s/tuples", content=b'{"a": 3}\n{"a": 4}\n', headers=JSON)
    assert r.status_code == 503 and "max_queued = 3" in r.json()["error"]["message"]
    post_ok(c, "RESUME SOURCE s;")
    assert wait_until(lambda: (tmp_path / "out.jsonl").exists()
                      and (tmp_path / "out.jsonl").read_text() == '{"a":1}\n{"a":2.0}\n', 30)
    r = c.post("/topologies/t/sources/s/tuples", content=b'{"a": 3}', headers=JSON)
    assert (r.status_code, r.json()) == (200, {"accepted": 1, "dropped": 0, "errors": []})


@pytest.mark.parametrize("started", [False, True])
def test_dropping_a_source_refuses_its_waiting_requests(local, started):
    srv, c = local
    post_ok(c, 'CREATE PAUSED SOURCE s TYPE http WITH ack_timeout = "300ms";')
    if started:  # its thread runs, then waits paused
        post_ok(c, "RESUME SOURCE s;")
        assert c.post("/topologies/t/sources/s/tuples", content=b'{"a": 0}', headers=JSON).status_code == 200
        post_ok(c, "PAUSE SOURCE s;")
    answer: list[httpx.Response] = []
    with srv.client() as other:
        sender = threading.Thread(target=lambda: answer.append(
            other.post("/topologies/t/sources/s/tuples", content=b'{"a": 1}', headers=JSON)))
        sender.start()
        assert wait_until(lambda: status(c, "source", "s")["source"]["num_queued"] == 1, 10)
        post_ok(c, "DROP SOURCE s;")
        sender.join(30)
    assert answer[0].status_code == 409 and answer[0].json()["error"]["message"] == "source 's' is stopped"


def test_ingest_errors(local, tmp_path):
    _srv, c = local
    (tmp_path / "in.jsonl").write_text("")
    post_ok(c, f"""CREATE PAUSED SOURCE f TYPE file WITH path = "{tmp_path}/in.jsonl";""")
    cases = [("/topologies/nope/sources/s/tuples", JSON, 404, "The topology doesn't exist"),
             ("/topologies/t/sources/nope/tuples", JSON, 404, "The source was not found"),
             ("/topologies/t/sources/f/tuples", JSON, 400, "source 'f' is of type 'file', not 'http'"),
             ("/topologies/t/sources/f/tuples", {"Content-Type": "text/plain"}, 415, "must be JSON")]
    for url, headers, code, message in cases:
        r = c.post(url, content=b'{"a": 1}', headers=headers)
        assert r.status_code == code and message in r.json()["error"]["message"], (url, r.text)


# ---------------------------------------------------------------- SELECT as Server-Sent Events


def sse_events(response: httpx.Response):
    """``(event name or None, data text)`` of each event of an SSE response."""
    name, data = None, []
    for text in response.iter_lines():
        if text == "":
            if data:
                yield name, "\n".join(data)
            name, data = None, []
        elif text.startswith("event: "):
            name = text[7:]
        elif text.startswith("data: "):
            data.append(text[6:])


def test_select_events_equal_the_multipart_answer(local):
    srv, c = local
    post_ok(c, "CREATE SOURCE s TYPE http;")
    query = "SELECT RSTREAM a, a / 2 AS h, s FROM s [RANGE 1 TUPLES] WHERE a != 2;"
    n = 6
    got: dict[str, list[str]] = {"sse": [], "multipart": []}
    ready = {k: threading.Event() for k in got}

    def read_sse() -> None:
        with srv.client() as cc, cc.stream("GET", "/topologies/t/select", params={"q": query}) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            ready["sse"].set()
            for name, data in sse_events(r):
                got["sse"].append(json.dumps(json.loads(data)))
                if len(got["sse"]) == n:
                    return

    def read_multipart() -> None:
        with srv.client() as cc, cc.stream("POST", "/topologies/t/queries", json={"queries": query}) as r:
            ready["multipart"].set()
            for row in iter_multipart(r.iter_raw(), r.headers["content-type"].split("boundary=")[1].strip('"')):
                got["multipart"].append(json.dumps(row))
                if len(got["multipart"]) == n:
                    return

    threads = [threading.Thread(target=read_sse, daemon=True), threading.Thread(target=read_multipart, daemon=True)]
    for t in threads:
        t.start()
    assert all(e.wait(30) for e in ready.values())  # headers come once the cursor is attached
    body = "".join(json.dumps({"a": a, "s": f"x{a}"}) + "\n" for a in range(n + 1)).encode()
    assert c.post("/topologies/t/sources/s/tuples", content=body, headers=JSON).status_code == 200
    for t in threads:
        t.join(30)
    assert len(got["sse"]) == n and got["sse"] == got["multipart"]


def test_select_events_end_with_the_query_and_errors_are_envelopes(local, tmp_path):
    srv, c = local
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"i": i, "f": i / 2}) + "\n" for i in range(5)))
    post_ok(c, f"""CREATE PAUSED SOURCE f TYPE file WITH path = "{tmp_path}/in.jsonl";""")
    events: list[tuple[str | None, str]] = []
    with srv.client() as cc, cc.stream("GET", "/topologies/t/select",
                                       params={"q": "SELECT RSTREAM * FROM f [RANGE 1 TUPLES];"}) as r:
        post_ok(c, "RESUME SOURCE f;")
        events = list(sse_events(r))
    lines = (tmp_path / "in.jsonl").read_text().splitlines()
    assert events == [(None, json.dumps(json.loads(x), separators=(",", ":"))) for x in lines] + [("end", "{}")]
    r = c.get("/topologies/t/select", params={"q": "SELECT RSTREAM * FROM;"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "E0006"
    r = c.get("/topologies/t/select", params={"q": "EVAL 1;"})
    assert r.status_code == 400 and "exactly one SELECT" in r.json()["error"]["meta"]["error"]
    r = c.get("/topologies/t/select", params={"q": "SELECT RSTREAM * FROM nope [RANGE 1 TUPLES];"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "E0007"
