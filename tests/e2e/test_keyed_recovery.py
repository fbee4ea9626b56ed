"""Crash recovery of a keyed MATCH_RECOGNIZE (PARTITION BY on executors): the source is paused half-way,
the query catches up (the sink holds every match the journaled rows complete) and ``kill -9`` hits
``sbpy run`` while other matches are open (between two of their rows); after a restart on the same
config and RESUME SOURCE, every match is in the file sink exactly once, in the order the in-process
matcher emits them."""
from __future__ import annotations

import json
import time

import pytest

from sbpy.bql.runtime.testing import run_query
from server_process import lines, new_server, wait, warm_up

pytestmark = pytest.mark.spark

N = 480
INTERVAL = 0.01
SYMBOLS = ["s0", "s1", "s2", "s3"]
QUERY = ("SELECT RSTREAM * FROM src MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY t "
         "MEASURES FIRST(A.id) AS first_id, LAST(C.id) AS last_id, count(B.id) AS nb ONE ROW PER MATCH "
         "PATTERN (A B+ C) DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price))")


def ticker() -> list[dict]:
    """Per symbol a saw-tooth: ~12 falling prices then a rise, so every match spans many rows."""
    rows = []
    for i in range(N):
        sym = SYMBOLS[i % len(SYMBOLS)]
        k = i // len(SYMBOLS)
        phase = (k + 3 * (i % len(SYMBOLS))) % 13
        rows.append({"id": i, "symbol": sym, "t": 100 * i, "price": 100 - phase if phase < 12 else 120})
    return rows


def open_matches(rows: list[dict], done: int, outputs: list[dict]) -> list[dict]:
    """Matches of the full run whose first row is before ``done`` and whose last row is at/after it."""
    return [m for m in outputs if m["first_id"] < done <= m["last_id"]]


def prefix_outputs(prefix: list[dict]) -> list[dict]:
    """What the in-process matcher emits for ``prefix`` while the input has not ended."""
    from sbpy.bql.runtime import build_processor
    from sbpy.bql.runtime.processor import Tuple
    from sbpy.bql.runtime.testing import CLOCK_EPOCH, json_ready, parse_select

    proc = build_processor(parse_select(QUERY))
    return [json_ready(t.data) for i, r in enumerate(prefix)
            for t in proc.process(Tuple(dict(r), CLOCK_EPOCH, i + 1, "src")).outputs]


def test_kill_9_inside_open_matches_each_match_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SBPY_KEYED_MATCH", "1")  # the server (a child process) runs it keyed on request
    rows = ticker()
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"src": rows})
    assert len(expected) >= 30
    server = new_server(tmp_path)
    try:
        server.start()
        warm_up(server, tmp_path)
        server.file_pipeline("mr", "m", QUERY, src, out, INTERVAL)
        # pause the source half-way, let the query catch up with what was journaled, then kill -9
        wait(lambda: server.source_sent("mr") >= N // 2, 240, "half of the input", server)
        server.queries("mr", "PAUSE SOURCE src;")
        journal = tmp_path / "data/topologies/mr/journal/src/log.jsonl"
        journaled = -1
        while journaled != len(journal.read_text().splitlines()):  # until the paused source is still
            journaled = len(journal.read_text().splitlines())
            time.sleep(0.5)
        assert journaled < N, "the source ended before the pause"
        done_before = prefix_outputs(rows[:journaled])
        assert done_before and open_matches(rows, journaled, expected), "no match was open at the crash"
        wait(lambda: len(lines(out)) >= len(done_before), 240, "the matches of the journaled rows", server)
        time.sleep(0.5)
        server.kill()
        before = lines(out)
        assert before == done_before == expected[:len(before)]
        assert list((tmp_path / "data/topologies/mr/checkpoints").glob("*/keyed-v4/commits"))

        server.start()
        server.queries("mr", "RESUME SOURCE src;")  # the replayed statements end with the PAUSE
        server.wait_stopped("mr", "m", 240, "the stream to stop after the restart")
        wait(lambda: len(lines(out)) >= len(expected), 30, "every match in the sink", server)
        time.sleep(0.5)  # a duplicate would be written right after the last expected line
        status = server.get("/topologies/mr/streams/m")["stream"]["status"]
        server.drop("mr")
        text = out.read_text()
    finally:
        server.kill()
    got = [json.loads(x) for x in text.splitlines()]
    assert got == expected  # every match exactly once, in order
    print(f"killed after {len(before)} matches and {journaled} rows; stream status {status}")
