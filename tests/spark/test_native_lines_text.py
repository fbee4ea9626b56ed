"""The native tier's sink lines as one text (``jsonio.JsonLines``): built over Arrow's value buffers
(``native_collect._json_lines``: the values are the lines, each given its newline in one vectorized step), written by the ``file`` sink as they are, and handed to a plugin sink
as the list of lines it takes. No Spark session: the Arrow columns are built here as the driver
receives them (several chunks, sliced chunks, ``string`` and ``large_string``)."""
from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbpy.bql.jsonio import JsonLines
from sbpy.bql.spark.native_collect import _json_lines
from sbpy.plugins.builtin.sinks import FileSink
from sbpy.server.nodes.sink_node import SinkNode

line_text = st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(chunks=st.lists(st.lists(line_text, max_size=6), min_size=1, max_size=4),
       cut=st.integers(0, 3), large=st.booleans())
def test_json_lines_are_the_values_in_order(chunks, cut, large):
    kind = pa.large_string() if large else pa.string()
    arrays = [pa.array(c, type=kind) for c in chunks]
    arrays = [a.slice(min(cut, len(a))) for a in arrays]  # chunks that start at an offset
    column = pa.chunked_array(arrays, type=kind)
    expected = column.to_pylist()
    got = _json_lines(column)
    assert len(got) == len(expected)
    assert list(got) == expected
    assert got.text() == "".join(x + "\n" for x in expected).encode("utf-8")


def test_a_null_line_is_refused():
    with pytest.raises(ValueError, match="NULL"):
        _json_lines(pa.chunked_array([pa.array(["a", None])]))


def test_the_file_sink_writes_the_text_as_lines_would_be(tmp_path):
    lines = ['{"a":1}', '{"b":"é"}', "{}"]
    text = FileSink({"path": str(tmp_path / "t.jsonl")})
    listed = FileSink({"path": str(tmp_path / "l.jsonl")})
    try:
        text.write_json_lines(JsonLines([b'{"a":1}\n{"b":', '"é"}\n{}\n'.encode()], 3), ("q", 0))
        text.write_json_lines(JsonLines([b'{"a":1}\n{"b":', '"é"}\n{}\n'.encode()], 3), ("q", 0))  # a replay
        listed.write_json_lines(lines, ("q", 0))
    finally:
        text.close()
        listed.close()
    assert (tmp_path / "t.jsonl").read_bytes() == (tmp_path / "l.jsonl").read_bytes()
    assert (tmp_path / "t.jsonl").read_text().splitlines() == lines


class ListSink:
    """A plugin sink that takes pre-encoded lines as a list."""

    def __init__(self):
        self.got = []

    def write_json_lines(self, lines, batch=None):
        assert isinstance(lines, list)
        self.got.extend(lines)

    def close(self):
        pass


def test_a_plugin_sink_gets_a_list_and_the_counters_count_lines():
    impl = ListSink()
    node = SinkNode("k", "list", impl)
    node.write_json_lines("x", JsonLines([b'{"a":1}\n', b'{"a":2}\n'], 2), ("q", 0))
    assert impl.got == ['{"a":1}', '{"a":2}']
    assert node.status()["input_stats"]["num_received_total"] == 2
