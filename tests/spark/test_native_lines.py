"""The native tier with its lines read by the JVM equals the sequential kernel, row for row.

One journal holds what a ``src`` input can hold: file segments of typical JSON lines (decided by Spark
expressions) and odd ones (strings, NULLs, missing fields, escapes, duplicate keys, bad JSON, blank and
whitespace-only lines, CRLF endings, multi-byte UTF-8, a last line without its newline), tuples journaled
by value between them, a ``timestamp_field`` segment, a segment with bytes that are not UTF-8, a segment
whose file changed after it was journaled, and an end marker. The native query runs over it in small
micro-batches (so partitions cut segments mid-way) in each of ``native_query.MODES`` — descriptors expanded
by ``sbpy_file_fields`` (split and JSON pass in one JVM call) or by ``sbpy_file_lines`` (then
``sbpy_json_fields`` per line), and the older Arrow lines — and its ``out`` rows (data and order), dropped tuples
(error texts), ends and stage counters must be the sequential kernel's (``operator.Pipeline`` fed the
journal as ``journal_segments.expand`` reads it), for both output formats.
"""
from __future__ import annotations

import json
from collections import Counter

import pytest
from sbpy.bql.plan import Tier, plan_query
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import journal_segments as js
from sbpy.bql.spark.compile import query_spec_stages
from sbpy.bql.spark.native_query import lines_mode, start_native_query
from sbpy.bql.spark.native_udf import status
from sbpy.bql.spark.query import QuerySpec
from sbpy.bql.spark.stateless_query import EncodedBatch, chain_pipeline
from sbpy.server.journal import JournalWriter

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")]

CHAIN = [
    ("s1", ('SELECT RSTREAM id, price, name, 1 AS one FROM src [RANGE 1 TUPLES] '
            'WHERE price < 8 AND (name != "skip" OR id > 100)'), ["src"]),
    ("s2", "SELECT RSTREAM price, id FROM s1 [RANGE 1 TUPLES] WHERE id >= 3", ["s1"]),
]


def _line(i: int) -> str:
    row = {"id": i, "price": (i % 11) * 0.75, "name": "skip" if i % 13 == 0 else f"s{i % 5}"}
    if i % 37 == 0:
        row["price"] = "oops"
    if i % 41 == 0:
        del row["name"]
    if i % 43 == 0:
        row["price"] = None
    if i % 7 == 0:
        row["name"] = "日本é😀"
    text = json.dumps(row, ensure_ascii=False)
    if i % 47 == 0:
        text = text.replace('"price": ', '"price": 7.50, "price": ')
    if i % 53 == 0:
        text = text.replace('"s', '"\\u0073')
    return text


def _file_bytes(n: int, start: int) -> bytes:
    parts = []
    for i in range(start, start + n):
        end = "\r\n" if i % 5 == 0 else "\n"
        parts.append(_line(i) + end)
        if i % 59 == 0:
            parts.append("{not json\n")
        if i % 61 == 0:
            parts.append("   \n" if i % 2 else "\n")
    return "".join(parts).encode("utf-8")


def _segments(writer, path, raw, size, tsf=None, line=1):
    """Journal ``raw`` (the whole file at ``path``) as segments of about ``size`` bytes, cut at newlines."""
    start = 0
    while start < len(raw):
        end = raw.find(b"\n", min(start + size, len(raw) - 1))
        end = len(raw) if end < 0 else end + 1
        chunk = raw[start:end]
        writer.append_segment("src", 1_000 * (start + 1), js.make_segment(str(path), start, chunk, line, 0, tsf))
        line += chunk.count(b"\n")
        start = end


@pytest.fixture(scope="module")
def journal(tmp_path_factory):
    root = tmp_path_factory.mktemp("native-lines")
    writer = JournalWriter(root / "journal", fsync=False)
    main = root / "main.jsonl"
    raw = _file_bytes(3000, 0)
    main.write_bytes(raw + _line(9999).encode())  # the last line without its newline
    _segments(writer, main, main.read_bytes(), 20_000)
    writer.append("src", [(5_000, {"id": 5000 + k, "price": k, "name": "t"}) for k in range(20)])
    stamped = root / "stamped.jsonl"
    stamped.write_bytes(b"".join(b'{"id": %d, "price": 1, "name": "a", "at": %d}\n' % (k, k) for k in range(30)))
    _segments(writer, stamped, stamped.read_bytes(), 10_000, tsf="at")
    latin = root / "latin.jsonl"
    latin.write_bytes(b'{"id": 7, "price": 2, "name": "ok"}\n{"id": 8, "price": 3, "name": "caf\xe9"}\n'
                      b'{"id": 9, "price": 4, "name": "ok"}\n')
    _segments(writer, latin, latin.read_bytes(), 10_000)
    gone = root / "gone.jsonl"
    gone.write_bytes(_file_bytes(40, 4000))
    _segments(writer, gone, gone.read_bytes(), 10_000)
    gone.write_bytes(b"{}\n")  # changed after it was journaled: the lines are reported lost
    more = root / "more.jsonl"
    more.write_bytes(_file_bytes(500, 5000))
    _segments(writer, more, more.read_bytes(), 8_000)
    writer.end("src")
    writer.close()
    return root / "journal", jf.read_head(root / "journal")


def _reference(journal_dir, head, out_format):
    stages = query_spec_stages(plan_query(["src"], CHAIN))
    pipeline = chain_pipeline("ref-" + out_format, stages, "t", out_format)
    return pipeline.run(jf.read_entries(journal_dir, ["src"], 0, head))


def _canonical(kind, data, out_format):
    """Row data as comparable text: a JSON sink's line as it is, any other value as its tagged JSON
    (which keeps 2 and 2.0 apart)."""
    if data is None or (kind == "out" and out_format == "json"):
        return data
    return jf.encode_data(jf.decode_data(data) if isinstance(data, str) else data)


def _normalized_reference(rows, out_format):
    out, stats = [], Counter()
    for kind, node, seq, _idx, ts, data, error, input_name, _event in rows:
        if kind == "stat":
            counts = jf.decode_data(data)
            for key in ("sent", "dropped"):
                stats[(node, key)] += counts[key]
            stats[(node, "received")] += sum(counts["received"].values())
        else:
            out.append((kind, node, seq, _canonical(kind, data, out_format), error, ts, input_name))
    return out, stats


def _normalized_got(batches, out_format):
    """The query's rows in the reference's shape (``out`` data as text: tagged or the sink's JSON line)."""
    out, stats = [], Counter()
    for rows in batches:
        lines = iter(rows.lines) if isinstance(rows, EncodedBatch) else None
        dicts = rows.others if isinstance(rows, EncodedBatch) else rows
        if lines is not None:  # the sink's lines first come in order; the others carry their seqs
            out.extend(("out", None, None, line, None, None, None) for line in lines)
        for r in dicts:
            if r["kind"] == "stat":
                for key in ("sent", "dropped"):
                    stats[(r["node"], key)] += r["data"][key]
                stats[(r["node"], "received")] += sum(r["data"]["received"].values())
                continue
            out.append((r["kind"], r["node"], r["seq"], _canonical(r["kind"], r["data"], out_format), r["error"],
                        r["ts"], r["input"]))
    return out, stats


def _comparable(rows, encoded):
    """For a JSON sink the ``out`` lines and the other rows are compared apart (their seqs are not sent).
    An ``out`` row's node is not compared: the native rows leave it empty (only the last stage emits)."""
    if not encoded:
        return [("out", None, *r[2:]) if r[0] == "out" else r for r in rows]
    return ([r[3] for r in rows if r[0] == "out"], [r for r in rows if r[0] != "out"])


def test_the_session_reads_lines_in_the_jvm(spark, monkeypatch):
    assert lines_mode(spark) == "fields"
    monkeypatch.setenv("SBPY_NATIVE_LINES", "jvm")
    assert lines_mode(spark) == "jvm"
    monkeypatch.setenv("SBPY_NATIVE_LINES", "arrow")
    assert lines_mode(spark) == "arrow"


@pytest.mark.parametrize("out_format", ["tagged", "json"])
@pytest.mark.parametrize("mode", ["fields", "jvm", "arrow"])
def test_native_lines_equal_the_sequential_kernel(spark, tmp_path, journal, mode, out_format):
    journal_dir, head = journal
    plan = plan_query(["src"], CHAIN)
    assert all(s.tier is Tier.NATIVE for s in plan.stages)
    batches = []
    spec = QuerySpec(query_id=f"t.lines.{mode}.{out_format}", journal_dir=journal_dir, inputs=("src",),
                     stages=query_spec_stages(plan), checkpoint_dir=tmp_path / "ck", topology="t",
                     on_batch=lambda batch_id, rows: batches.append(rows), plan=plan, max_seqs=1500,
                     out_format=out_format)
    handle = start_native_query(spark, spec, lines=mode)
    try:
        handle.process_all_available()
        assert handle.error is None
    finally:
        handle.stop()
    expected, expected_stats = _normalized_reference(_reference(journal_dir, head, out_format), out_format)
    got, got_stats = _normalized_got(batches, out_format)
    encoded = out_format == "json"
    assert _comparable(got, encoded) == _comparable(expected, encoded)
    assert got_stats == expected_stats
    kinds = Counter(r[0] for r in expected)
    assert kinds["out"] > 1000 and kinds["dropped"] > 50 and kinds["end"] == 2  # one per stage
    assert any("changed or are gone" in (r[4] or "") for r in expected)
    assert len({r[5] for r in expected if r[0] == "out"}) > 5  # the outputs' times differ (rebuilt per block)
    assert len(batches) >= 3  # several micro-batches: segments are cut between batches and partitions
