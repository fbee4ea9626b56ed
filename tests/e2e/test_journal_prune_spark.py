"""Journal pruning under a real ``sbpy run`` with Spark: small journal files (``SBPY_JOURNAL_ROLL_BYTES``)
are pruned behind the query's committed checkpoint while a file source streams; then ``kill -9`` and a
restart on the same config: the restored query resumes from its checkpoint without needing a pruned
file, and the sink holds every output exactly once, in order (window values included)."""
from __future__ import annotations

import json
import time

import pytest

from sbpy.bql.runtime.testing import run_query
from sbpy.bql.spark import journal_format as jf
from server_process import lines, new_server, wait, warm_up

pytestmark = pytest.mark.spark

N = 800  # input lines
INTERVAL = 0.02  # seconds between lines: the source runs ~16 s
ROLL = 1024  # bytes per journal file: ~15 entries
QUERY = "SELECT RSTREAM count(*) AS n, sum(x) AS s, max(id) AS last FROM src [RANGE 10 TUPLES]"


def _journal_bytes(journal) -> int:
    return sum(p.stat().st_size for p in journal.rglob("*.jsonl"))


def test_kill_9_after_pruning_and_restart_exactly_once(tmp_path, monkeypatch):
    monkeypatch.setenv("SBPY_JOURNAL_ROLL_BYTES", str(ROLL))
    rows = [{"id": i, "x": i} for i in range(N)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(QUERY, {"src": rows})
    journal = tmp_path / "data/topologies/pr/journal"
    entry = len(jf.encode_entry(N, 1732480000000000, {"id": N, "x": N})) + 1
    server = new_server(tmp_path)
    try:
        server.start()
        warm_up(server, tmp_path)
        t0 = time.monotonic()
        server.file_pipeline("pr", "agg", QUERY, src, out, INTERVAL)
        # kill -9 once files were pruned behind the committed checkpoint, while the source still reads
        wait(lambda: jf.read_pruned(journal / "src")["count"] >= 100 or server.source_sent("pr") >= N * 0.8,
             240, "a prune", server)
        pruned = jf.read_pruned(journal / "src")
        sent = server.source_sent("pr")
        size = _journal_bytes(journal)
        server.kill()
        before = lines(out)
        print(f"killed after {len(before)} outputs, {sent} sent, {pruned['count']} pruned, journal {size} B "
              f"(unpruned ~{sent * entry} B), {time.monotonic() - t0:.1f} s")
        assert pruned["count"] > 0, "nothing was pruned before the source ended"
        assert sent < N, "the source ended before the crash"
        assert size < sent * entry
        assert before == expected[:len(before)]

        server.start()
        server.wait_stopped("pr", "agg", 240, "the stream to stop after the restart")
        wait(lambda: len(lines(out)) >= N, 60, "every output in the sink", server)
        final = _journal_bytes(journal)
        print(f"journal at the end: {final} B ({len(jf.log_files(journal / 'src'))} files), "
              f"pruned {jf.read_pruned(journal / 'src')['count']} of {N} tuples")
        assert "were pruned" not in server.log.read_text(errors="replace")
        server.drop("pr")
        text = out.read_text()
    finally:
        server.kill()
    got = [json.loads(x) for x in text.splitlines()]
    assert got == expected  # every output exactly once, in order


KEYED = ("SELECT RSTREAM * FROM src MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY t "
         "MEASURES FIRST(A.id) AS first_id, LAST(B.id) AS last_id, count(B.id) AS nb ONE ROW PER MATCH "
         "PATTERN (A B+) DEFINE B AS B.price < PREV(B.price))")


def test_a_keyed_match_lets_its_journal_be_pruned_and_still_ends_every_key(tmp_path, monkeypatch):
    """A keyed MATCH_RECOGNIZE (PARTITION BY on executors) keeps its keys in its buckets' state, so its
    journal is pruned behind its newest committed batch while the source streams; when the input ends,
    every key's open match (a falling run only the end closes) is finished without re-reading the
    journal: the sink holds the in-process matcher's rows, in order."""
    monkeypatch.setenv("SBPY_JOURNAL_ROLL_BYTES", str(ROLL))
    monkeypatch.setenv("SBPY_KEYED_MATCH", "1")  # the server (a child process) runs it keyed on request
    symbols = ["s0", "s1", "s2", "s3", "s4"]
    rows = [{"id": i, "symbol": symbols[i % 5], "t": i, "price": 100 - (i // 5) % 9} for i in range(N // 2)]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    expected = run_query(KEYED, {"src": rows})
    assert sum(1 for m in expected if m["last_id"] >= len(rows) - 5) == len(symbols)  # closed by the end
    journal = tmp_path / "data/topologies/km/journal"
    server = new_server(tmp_path)
    try:
        server.start()
        warm_up(server, tmp_path)
        server.file_pipeline("km", "m", KEYED, src, out, INTERVAL)
        server.wait_stopped("km", "m", 240, "the stream to stop")
        wait(lambda: len(lines(out)) >= len(expected), 60, "every match in the sink", server)
        # pruned behind a committed batch while the source streams, or at the latest once the query ended
        wait(lambda: jf.read_pruned(journal / "src")["count"] > 0, 30, "the journal pruned behind the keyed "
             "plan (it held its whole journal back)", server)
        pruned = jf.read_pruned(journal / "src")["count"]
        assert "were pruned" not in server.log.read_text(errors="replace")
        assert list((tmp_path / "data/topologies/km/checkpoints").glob("*/keyed-v4/commits"))
        server.drop("km")
        text = out.read_text()
    finally:
        server.kill()
    got = [json.loads(x) for x in text.splitlines()]
    assert got == expected
    print(f"{len(got)} matches, {pruned} of {len(rows)} tuples pruned")
