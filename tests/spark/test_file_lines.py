"""``sbpy_file_lines`` (``java/FileLines.java``) against the Python reader's own line split.

The reference is the Arrow mode of ``native_source`` (``block_batch``): the lines a block hands to Spark
when Python ships them. For random files — CRLF and lone CR, blank lines, whitespace-only lines,
multi-byte UTF-8, a last line without its newline — cut into random segments and random blocks, the JVM
function must return exactly those lines; and when the bytes on disk are not the journaled ones (shorter,
another CRC, not UTF-8, another line count) it must throw rather than return anything.
"""
from __future__ import annotations

import zlib
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sbpy.bql.spark import journal_segments as js
from sbpy.bql.spark.native_source import LineBlock, SegmentLines, block_batch, descriptor_row, segment_lines
from sbpy.bql.spark.native_keys import number_key
from sbpy.bql.spark.native_udf import (
    FIELDS_FUNCTION,
    LINES_FUNCTION,
    file_fields_registered,
    file_lines_registered,
    status,
)

pytestmark = [pytest.mark.spark, pytest.mark.skipif(not status()[0], reason=f"native tier off: {status()[1]}")]

PIECES = ['{"a":1}', '{"b":"é"}', "日本", "😀", " ", "\t", "\r", "", "x", '{"c": [1, 2]}', "\u00a0", "\u2028",
          '{"a": 7.50, "b": "日本", "c": null}', '{"é": 1, "b": -0, "a": [{"b": 2}]}', '{"b":"x\\"y"}']
line_text = st.lists(st.sampled_from(PIECES), max_size=4).map("".join)
file_lines = st.lists(st.tuples(line_text, st.sampled_from(["\n", "\r\n"])), min_size=1, max_size=12)


@st.composite
def files(draw):
    """``(bytes, [(start, end)])``: a file and its cut into segments at line boundaries."""
    lines = draw(file_lines)
    data = "".join(t + nl for t, nl in lines)
    if draw(st.booleans()):
        data = data[:-1]  # the last line without its newline (a CRLF line keeps its "\r")
    raw = data.encode("utf-8")
    ends = sorted({i + 1 for i, b in enumerate(raw) if b == 10} | {len(raw)})
    cuts = sorted(draw(st.sets(st.sampled_from(ends), max_size=3)) | {len(raw)})
    segments, start = [], 0
    for end in cuts:
        if end > start:
            segments.append((start, end))
            start = end
    return raw, segments


def _lines(spark, descriptors):
    """``sbpy_file_lines`` of each ``(path, spec)``, in one Spark job."""
    df = spark.createDataFrame(descriptors, "path string, spec string")
    return [r[0] for r in df.selectExpr(f"{LINES_FUNCTION}(path, spec)").collect()]


def _blocks(path, raw, segments, seq_start, choose):
    """Each segment as a ``(SegmentLines, LineBlock)`` pair over the same random sub-range of its lines."""
    out, seq = [], seq_start
    for start, end in segments:
        chunk = raw[start:end]
        seg = js.make_segment(str(path), start, chunk, 1, 0, None)
        last_seq = js.last_seq(seq, seg)
        first, last = choose(seq, last_seq)
        jvm = segment_lines(seq, 7, seg, "src", first - 1, last)
        arrow = LineBlock(first, "src", 7, chunk, seq, last, str(path), 1 - seq, seg)
        out.append((jvm, arrow))
        seq = last_seq + 1
    return out


def test_session_knows_the_function(spark):
    assert file_lines_registered(spark)
    assert file_fields_registered(spark)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.lists(files(), min_size=1, max_size=4), data=st.data())
def test_jvm_lines_equal_the_python_split(spark, tmp_path, case, data):
    def choose(a, b):
        first = data.draw(st.integers(a, b))
        return first, data.draw(st.integers(first, b))

    descriptors, expected = [], []
    for k, (raw, segments) in enumerate(case):
        path = tmp_path / f"f{k}.jsonl"
        path.write_bytes(b"PREFIX\n" + raw)  # segments start after a first line that no block reads
        shifted = [(s + 7, e + 7) for s, e in segments]
        for jvm, arrow in _blocks(path, b"PREFIX\n" + raw, shifted, 1 + 100 * k, choose):
            assert len(jvm) == 1 and type(jvm[0]) is SegmentLines  # UTF-8, on disk: the JVM's
            row = descriptor_row(jvm[0])
            descriptors.append((row[5], row[8]))
            expected.append(block_batch(arrow).column("data").to_pylist())
    assert _lines(spark, descriptors) == expected


KEYS = "=a\u0001#b\u0001=é"  # b is wanted as a number too


def _fields(spark, descriptors):
    """``sbpy_file_fields`` of each ``(path, spec)`` over ``KEYS``, and ``sbpy_json_fields`` of each line that
    ``sbpy_file_lines`` gives for it, in one Spark job."""
    df = spark.createDataFrame(descriptors, "path string, spec string")
    got = df.selectExpr(f"{FIELDS_FUNCTION}(path, spec, '{KEYS}') AS f",
                        f"transform({LINES_FUNCTION}(path, spec), "
                        f"l -> struct(l, sbpy_json_fields(l, '{KEYS}'))) AS w")
    return [(r["f"], r["w"]) for r in got.collect()]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.lists(files(), min_size=1, max_size=3), data=st.data())
def test_file_fields_are_the_lines_with_their_json_pass(spark, tmp_path, case, data):
    """Each line of ``sbpy_file_fields`` is ``[line, "", fields...]`` with ``sbpy_json_fields``' fields of
    that line (over the same keys), or ``[line]`` where that function refuses it; the lines are
    ``sbpy_file_lines``'."""
    def choose(a, b):
        first = data.draw(st.integers(a, b))
        return first, data.draw(st.integers(first, b))

    descriptors = []
    for k, (raw, segments) in enumerate(case):
        path = tmp_path / f"f{k}.jsonl"
        path.write_bytes(raw)
        for jvm, _arrow in _blocks(path, raw, segments, 1 + 100 * k, choose):
            row = descriptor_row(jvm[0])
            descriptors.append((row[5], row[8]))
    for got, want in _fields(spark, descriptors):
        assert len(got) == len(want)
        for items, (line, fields) in zip(got, want):
            assert items == ([line] if fields is None else [line, ""] + fields)


def test_file_fields_decide_plain_lines(spark, tmp_path):
    """The usual lines are accepted, with views of the right bytes (multi-byte text before them too); a
    canonical container comes with its text too."""
    raw = '{"a": 1, "é": "日本", "b": 7.5}\n{"b": "x", "a": [1]}\r\n{"a": "\\u0041"}\n{"a":true}'.encode()
    path, seg = _segment(tmp_path, raw)
    ((got, _want),) = _fields(spark, [(str(path), _spec(seg))])
    lines = raw.decode().splitlines(keepends=True)
    assert got == [[lines[0], "", "i", "1", None, "f", "7.5", number_key(7.5), "s", '"日本"', None],
                   [lines[1], "", "x", "[1]", None, "s", '"x"', None, None, None, None],
                   [lines[2]], [lines[3], "", "b", "true", None] + [None] * 6]
    path.write_bytes(raw[:-3])
    with _failing_task(spark), pytest.raises(Exception, match="sbpy_file_fields: .*the file is shorter"):
        _fields(spark, [(str(path), _spec(seg))])


def _segment(tmp_path, raw):
    path = tmp_path / "f.jsonl"
    path.write_bytes(raw)
    return path, js.make_segment(str(path), 0, raw, 1, 0, None)


def _spec(seg, **over):
    values = {"start": seg["start"], "end": seg["end"], "crc": seg["crc"], "n": seg["n"], "skip": 0,
              "count": seg["n"], **over}
    return ",".join(str(values[k]) for k in ("start", "end", "crc", "n", "skip", "count"))


@contextmanager
def _failing_task(spark):
    """An expected task failure: Spark's log is off meanwhile — the root logger and the scheduler's
    ``TaskSetManager``, which has a logger config of its own (``server/spark_noise``) — since the executor
    and the scheduler would log the stack trace; then both are back at their levels."""
    log4j = spark.sparkContext._jvm.org.apache.logging.log4j
    name = "org.apache.spark.scheduler.TaskSetManager"
    before = log4j.LogManager.getLogger(name).getLevel()
    spark.sparkContext.setLogLevel("OFF")
    log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    try:
        yield
    finally:
        spark.sparkContext.setLogLevel("WARN")  # the level the test run's ``ServerContext`` set
        log4j.core.config.Configurator.setLevel(name, before)


def _fails(spark, path, spec, text):
    with _failing_task(spark), pytest.raises(Exception) as info:
        _lines(spark, [(str(path), spec)])
    assert text in str(info.value)


def test_a_shorter_file_fails_the_call(spark, tmp_path):
    raw = b'{"a":1}\n{"a":2}\n'
    path, seg = _segment(tmp_path, raw)
    assert _lines(spark, [(str(path), _spec(seg))]) == [['{"a":1}\n', '{"a":2}\n']]
    path.write_bytes(raw[:-3])
    _fails(spark, path, _spec(seg), "the file is shorter")


def test_changed_bytes_fail_the_call(spark, tmp_path):
    path, seg = _segment(tmp_path, b'{"a":1}\n{"a":2}\n')
    path.write_bytes(b'{"a":1}\n{"a":3}\n')
    _fails(spark, path, _spec(seg), "changed since they were journaled")


def test_bytes_that_are_not_utf8_fail_the_call(spark, tmp_path):
    raw = b'{"a":"\xff"}\n'
    path, seg = _segment(tmp_path, raw)
    assert seg["crc"] == zlib.crc32(raw)
    _fails(spark, path, _spec(seg), "are not UTF-8")


def test_another_line_count_fails_the_call(spark, tmp_path):
    path, seg = _segment(tmp_path, b'{"a":1}\n{"a":2}\n')
    _fails(spark, path, _spec(seg, n=3, count=3), "the journal says 3")
    _fails(spark, path, _spec(seg, skip=1, count=2), "bad spec")


def test_python_keeps_what_the_jvm_must_not_read(tmp_path):
    """The reader's decisions stay Python's: bytes gone or changed, not UTF-8, ``timestamp_field``."""
    path, seg = _segment(tmp_path, b'{"a":1}\n{"a":"\xff"}\n')
    (block,) = segment_lines(1, 7, seg, "src", 0, 2)
    assert type(block) is LineBlock  # not UTF-8: the Arrow path decides per block, as before
    path, seg = _segment(tmp_path, b'{"a":1}\n{"a":2}\n')
    rows = segment_lines(1, 7, dict(seg, tsf="a"), "src", 0, 2)
    assert [r[3] for r in rows] == ['{"a":1}', '{"a":2}']  # journal rows, through the Python expand
    path.write_bytes(b'{"a":1}\n')
    rows = segment_lines(1, 7, seg, "src", 0, 2)
    assert len(rows) == 1 and "changed or are gone" in rows[0][5]
