"""The journal format: value round trips, entry lines, HEAD, and the merged reader (no Spark)."""
from __future__ import annotations

import datetime as dt
import math

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.journal_values import _tag

UTC = dt.timezone.utc


@pytest.mark.parametrize("value", [
    None, True, False, 0, -(1 << 63), (1 << 63) - 1, 2.0, -0.5, "", "héllo\n\"q\"", b"", b"\x00\xffab",
    dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC), dt.datetime(1900, 1, 1, tzinfo=UTC),
    [], [1, "a", None, [2.5]], {}, {"a": {"b": [1, {"c": b"x"}]}},
    {"$ts": 5}, {"$blob": "x"}, {"$$x": 1, "$": 2, "plain": {"$float": "nan"}},
])
def test_value_round_trip(value):
    text = jf.encode_data(value)
    assert "\n" not in text
    back = jf.decode_data(text)
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("value", [
    {}, {"a": 1, "b": -0.0, "c": "héllo\n\"q\"\u2028", "d": [1, 2.5, None, {"e": True}]},
    {"big": (1 << 63) - 1, "small": -(1 << 63), "f": 1e300},
    {"t": dt.datetime(2024, 1, 2, tzinfo=UTC)}, {"b": b"\x00"}, {"$x": 1}, {"n": math.inf},
    {"ctl": "a\x01b"}, [1, 2], "text", 5, None,
])
def test_carried_data_packs_back_to_the_same_value(value):
    """``decode_data_carried``: the decoded value, and what a keyed plan's packed row carries — a plain map
    as itself (packed as JSON it comes back equal, same types), anything else as its text."""
    import orjson

    from sbpy.bql.spark.journal_values import decode_data_carried

    text = jf.encode_data(value)
    data, carried = decode_data_carried(text)
    assert data == value and type(data) is type(value)
    plain = type(value) is dict and "$" not in text and "\\u" not in text
    assert (carried is data) if plain else (carried == text)
    back = orjson.loads(orjson.dumps([carried]))[0]  # through a pack
    got = back if type(back) is dict else jf.decode_data(back)
    assert got == value and [type(v) for v in got.values()] == [type(v) for v in value.values()] \
        if plain else got == value


FLAT_KEYS = st.sampled_from(["a", "b", "$c", "$$d", "", "é", "$"])
SCALARS = (st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 63) - 1) | st.floats()
           | st.sampled_from([math.nan, math.inf, -math.inf, -0.0]) | st.text(max_size=4)
           | st.binary(max_size=3) | st.datetimes(timezones=st.just(UTC)))
FLAT_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(FLAT_KEYS, inner, max_size=3),
    max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(FLAT_KEYS, SCALARS, max_size=5) | st.dictionaries(FLAT_KEYS, FLAT_VALUES, max_size=5)
       | FLAT_VALUES)
def test_a_flat_map_is_written_as_the_walk_writes_it(value):
    """``encode_data``'s shortcut for a map of plain scalars gives the text of the tagging walk, byte for
    byte, for any value (NaN and infinities, ``$`` keys, timestamps, blobs, nested values)."""
    assert jf.encode_data(value) == orjson.dumps(_tag(value)).decode("utf-8")


def test_float_stays_float_and_non_finite():
    assert jf.encode_data({"x": 2.0}) == '{"x":2.0}'
    back = jf.decode_data(jf.encode_data([math.nan, math.inf, -math.inf]))
    assert math.isnan(back[0]) and back[1] == math.inf and back[2] == -math.inf


def test_timestamp_is_tagged_micros():
    ts = dt.datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)
    assert jf.encode_data({"t": ts}) == '{"t":{"$ts":1000005}}'
    assert jf.ts_to_us(ts) == 1_000_005 and jf.us_to_ts(1_000_005) == ts


def test_entry_lines():
    line = jf.encode_entry(7, 123, {"a": 1, "b": b"z"})
    assert line.startswith('{"seq":7,"ts":123,"data":')
    assert jf.decode_entry(line) == {"seq": 7, "ts": 123, "data": {"a": 1, "b": b"z"}, "end": False}
    assert jf.decode_entry(jf.encode_end(9)) == {"seq": 9, "ts": 0, "data": None, "end": True}
    # a line written by another JSON writer (spaces, other key order) still decodes
    assert jf.decode_entry('{"data": {"x": 1}, "ts": 5, "seq": 3}')["data"] == {"x": 1}
    assert jf.decode_entry('{"seq": 4, "end": true}')["end"] is True


def test_paths(tmp_path):
    j = jf.journal_dir(tmp_path, "t1")
    assert j == tmp_path / "topologies" / "t1" / "journal"
    assert jf.node_log_path(j, "src") == j / "src" / "log.jsonl"
    assert jf.checkpoint_dir(tmp_path, "t1", "out").name == "out-v1"


def test_head(tmp_path):
    assert jf.read_head(tmp_path / "none") == 0
    jf.write_head(tmp_path / "j", 5)
    jf.write_head(tmp_path / "j", 6)
    assert jf.read_head(tmp_path / "j") == 6
    assert [p.name for p in (tmp_path / "j").iterdir()] == ["HEAD"]


def _write(journal, node, lines):
    path = jf.node_log_path(journal, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")


@st.composite
def journal_lines(draw) -> list[str]:
    """A log's lines as sbpy writes them: entries of any value (maps, tagged values, `$` keys, non-maps),
    end markers and entries written with their keys in another order — seqs increasing."""
    lines, seq = [], 0
    for _ in range(draw(st.integers(0, 12))):
        seq += 1
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(jf.encode_end(seq))
        elif kind == 1:
            data = jf.encode_data(draw(st.dictionaries(FLAT_KEYS, SCALARS, max_size=3)))
            lines.append(f'{{"ts":{seq * 10},"data":{data},"seq":{seq}}}')
        else:
            value = draw(st.dictionaries(FLAT_KEYS, FLAT_VALUES, max_size=4) | FLAT_VALUES)
            lines.append(jf.encode_entry(seq, seq * 10, value))
    return lines


@settings(max_examples=200, deadline=None)
@given(journal_lines())
def test_reading_with_values_decodes_what_the_text_read_gives(tmp_path_factory, lines):
    """``read_entries(values=True)`` (the driver's read: each line parsed once, a map decoded as it is read)
    gives the rows of the text read with the data decoded wherever its JSON is an object (a map, a tagged
    value); any other row as the text read gives it."""
    j = tmp_path_factory.mktemp("j")
    _write(j, "a", lines)
    jf._OFFSETS.clear()
    texts = jf.read_entries(j, ["a"], 0, 1000)
    jf._OFFSETS.clear()
    values = jf.read_entries(j, ["a"], 0, 1000, values=True)
    assert len(values) == len(texts)
    for v, t in zip(values, texts):
        assert v[:3] + v[4:] == t[:3] + t[4:]
        if type(v[3]) is str or v[3] is None:
            assert v[3] == t[3]
        else:
            assert repr(v[3]) == repr(jf.decode_data(t[3]))


def test_read_entries_merges_by_seq(tmp_path):
    j = tmp_path / "j"
    _write(j, "a", [jf.encode_entry(1, 10, {"v": 1}), jf.encode_entry(3, 30, {"v": 3}), jf.encode_end(6)])
    _write(j, "b", [jf.encode_entry(2, 20, {"w": 2}), jf.encode_entry(4, 40, {"w": 4})])
    rows = jf.read_entries(j, ["a", "b", "missing"], 0, 4)
    assert [(r[0], r[1]) for r in rows] == [(1, "a"), (2, "b"), (3, "a"), (4, "b")]
    assert jf.decode_data(rows[1][3]) == {"w": 2} and rows[1][2] == 20
    rows = jf.read_entries(j, ["a", "b"], 2, 10)
    assert [(r[0], r[4]) for r in rows] == [(3, False), (4, False), (6, True)]
    assert rows[-1][3] is None


def test_read_ignores_partial_line_and_seeks(tmp_path):
    j = tmp_path / "j"
    _write(j, "a", [jf.encode_entry(i, i, {"i": i, "pad": "x" * 50}) for i in range(1, 2001)])
    path = jf.node_log_path(j, "a")
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"seq":2001,"ts":1,"da')  # being written
    for after in (0, 1, 999, 1500, 1999, 2000):
        rows = jf.read_entries(j, ["a"], after, 5000)
        assert [r[0] for r in rows] == list(range(after + 1, 2001))
    jf._OFFSETS.clear()
    for after in (1700, 3, 1234):  # bisection path, then cached seeks
        assert [r[0] for r in jf.read_entries(j, ["a"], after, after + 10)] == list(range(after + 1, after + 11))


def test_read_far_after_the_remembered_offset_bisects(tmp_path, monkeypatch):
    """A worker whose last read ended at seq 100 and now reads after seq 1900 (another worker read the
    ranges between) finds its start by bisection from the remembered offset, not line by line."""
    j = tmp_path / "j"
    _write(j, "a", [jf.encode_entry(i, i, {"i": i, "pad": "x" * 50}) for i in range(1, 2001)])
    jf._OFFSETS.clear()
    assert [r[0] for r in jf.read_entries(j, ["a"], 0, 100)] == list(range(1, 101))
    spans = []
    real = jf._line_span
    monkeypatch.setattr(jf, "_line_span", lambda line: spans.append(1) or real(line))
    assert [r[0] for r in jf.read_entries(j, ["a"], 1900, 1910)] == list(range(1901, 1911))
    assert len(spans) < 100  # line by line from seq 100 it was 1,800
    assert [r[0] for r in jf.read_entries(j, ["a"], 1910, 1920)] == list(range(1911, 1921))
    assert [r[0] for r in jf.read_entries(j, ["a"], 50, 60)] == list(range(51, 61))  # behind: from the start


def test_a_journal_tuple_makes_its_time_when_read_and_equals_the_plain_tuple():
    """``JournalTuple``: ``ts`` made from the journal's µs on first read (then kept), settable, equal to a
    ``Tuple`` with the same fields either way round, and pickled/copied as that ``Tuple``."""
    import copy
    import pickle

    from sbpy.bql.runtime.processor import Tuple
    from sbpy.bql.spark.journal_values import JournalTuple

    us = 1_700_000_000_123_456
    lazy = JournalTuple({"a": 1}, us, 7, "src")
    plain = Tuple({"a": 1}, jf.us_to_ts(us), 7, "src")
    assert lazy.ts == jf.us_to_ts(us) and lazy.ts is lazy.ts
    assert lazy == plain and plain == lazy
    assert lazy != Tuple({"a": 1}, jf.us_to_ts(us + 1), 7, "src")
    assert JournalTuple({"a": 1}, us, 8, "src") != plain and JournalTuple({"a": 2}, us, 7, "src") != plain
    for back in (pickle.loads(pickle.dumps(lazy)), copy.copy(lazy)):
        assert type(back) is Tuple and back == plain
    lazy.ts = jf.us_to_ts(5)
    assert lazy.ts == jf.us_to_ts(5) and lazy != plain
