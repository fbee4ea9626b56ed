"""A stream's own query appends its outputs to the journal once per micro-batch: a batch replayed after
a crash (same query key and batch id) is skipped, also by a writer recovered from disk."""
from __future__ import annotations

from sbpy.bql.spark import journal_format as jf
from sbpy.server.journal import JournalWriter


def _datas(d, node):
    return [e["data"] for e in map(jf.decode_entry, jf.node_log_path(d, node).read_text().splitlines())]


def test_replayed_batch_is_appended_once(tmp_path):
    w = JournalWriter(tmp_path)
    assert w.append("x", [(1, {"a": 1})], batch=("x-q", 0)) == 1
    assert w.append("x", [(1, {"a": 1})], batch=("x-q", 0)) == 1  # replayed: skipped
    assert w.append("x", [(2, {"a": 2})], batch=("x-q", 1)) == 2
    assert w.append("x", [(3, {"a": 3})]) == 3  # no batch: always appended
    w.close()
    w = JournalWriter(tmp_path)  # a restarted server
    assert w.append("x", [(2, {"a": 2})], batch=("x-q", 1)) == 3
    assert w.append("x", [(4, {"a": 4})], batch=("x-q2", 0)) == 4  # another query (a new plan)
    w.close()
    assert _datas(tmp_path, "x") == [{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}]
    assert jf.read_head(tmp_path) == 4 and jf.read_head_batches(tmp_path) == {"x": ["x-q2", 0]}


def test_reset_forgets_the_batches(tmp_path):
    w = JournalWriter(tmp_path)
    w.append("x", [(1, {"a": 1})], batch=("x-q", 5))
    w.reset("x")
    assert w.append("x", [(1, {"a": 1})], batch=("x-q", 0)) == 2
    w.close()


def test_replay_of_the_batch_that_ended_the_node_is_skipped(tmp_path):
    """The batch whose outputs were appended and whose end followed is replayed (its commit was lost):
    the outputs are skipped as for any replayed batch, not refused because the node has ended."""
    import pytest

    w = JournalWriter(tmp_path)
    w.append("x", [(1, {"a": 1})], batch=("x-q", 3))
    w.end("x")
    assert w.append("x", [(1, {"a": 1})], batch=("x-q", 3)) == 2  # the replay: nothing appended
    with pytest.raises(ValueError, match="already ended"):
        w.append("x", [(2, {"a": 2})], batch=("x-q", 4))  # a later batch after the end is an error
    w.close()
    assert _datas(tmp_path, "x") == [{"a": 1}, None]  # the tuple, then the end marker


def test_append_encoded_writes_what_append_writes(tmp_path):
    items = [(1, {"a": 1, "b": [1.5, None]}), (2, {"s": "x\ny", "m": {"k": True}})]
    plain, encoded = JournalWriter(tmp_path / "p"), JournalWriter(tmp_path / "e")
    assert plain.append("x", items, batch=("x-q", 0)) == 2
    assert encoded.append_encoded("x", [(ts, jf.encode_data(d)) for ts, d in items], batch=("x-q", 0)) == 2
    assert encoded.append_encoded("x", [(9, jf.encode_data({"a": 9}))], batch=("x-q", 0)) == 2  # replayed
    plain.close()
    encoded.close()
    assert jf.node_log_path(tmp_path / "e", "x").read_text() == jf.node_log_path(tmp_path / "p", "x").read_text()
    assert _datas(tmp_path / "e", "x") == [d for _, d in items]
