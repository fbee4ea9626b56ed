"""Where a split starts when the owner's query was restarted and has handled no batch yet in this run
(``replan._last_handled``, ``replan._await_replayed``): from the newest batch its checkpoint committed
before the restart — not from its pinned start, which made the new queries replay every output into the
sinks (found by ``tests/e2e/test_crash_random.py``, seed 937601: a kill mid-stream, then a late sink
attached at once after the restart) — after letting Spark re-run a planned batch it had not committed."""
from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from sbpy.bql.spark import checkpoint_positions, handoff
from sbpy.bql.spark import journal_format as jf
from sbpy.server.nodes import replan


def _checkpoint(tmp_path: Path, planned: int, committed: int) -> Path:
    """A query checkpoint pinned at seq 0 whose batch N ends at seq 10 * (N + 1)."""
    ck = tmp_path / "ck"
    jf.pin_start_seq(ck, 0)
    for folder, last in (("offsets", planned), ("commits", committed)):
        (ck / folder).mkdir(parents=True, exist_ok=True)
        for n in range(last + 1):
            (ck / folder / str(n)).write_text('v1\n{}\n{"seq": %d}\n' % (10 * (n + 1)))
    return ck


def test_a_restarted_owner_splits_at_its_last_committed_batch(tmp_path):
    ck = _checkpoint(tmp_path, planned=3, committed=3)
    owner = SimpleNamespace(id="a", last_batch=None, checkpoint_dir=ck)
    assert checkpoint_positions.last_committed(ck) == 3 and not checkpoint_positions.uncommitted(ck)
    assert replan._last_handled(owner) == 3
    assert handoff.position(ck, replan._last_handled(owner)) == 40  # not the pinned start, 0
    assert handoff.position(ck, None) == 0  # the pinned start
    with pytest.raises(FileNotFoundError):
        handoff.position(ck, 9)  # a batch the offset log does not hold
    owner.last_batch = 5  # a batch handled in this run wins
    assert replan._last_handled(owner) == 5
    fresh = SimpleNamespace(id="b", last_batch=None, checkpoint_dir=tmp_path / "none")
    assert replan._last_handled(fresh) is None  # never ran: the pinned start (or HEAD) is the position


def test_an_uncommitted_batch_runs_again_before_the_split(tmp_path):
    ck = _checkpoint(tmp_path, planned=4, committed=3)
    assert checkpoint_positions.uncommitted(ck)
    owner = SimpleNamespace(id="a", last_batch=None, checkpoint_dir=ck)
    handle = SimpleNamespace(is_active=True)
    waiting = threading.Event()
    done = threading.Event()

    def split_side() -> None:
        waiting.set()
        replan._await_replayed(owner, handle, timeout=60)
        done.set()

    t = threading.Thread(target=split_side)
    t.start()
    assert waiting.wait(10)
    assert not done.wait(0.3)  # still waiting for the re-run of batch 4
    owner.last_batch = 4  # the restarted query re-ran it (the sink recognised its rows)
    assert done.wait(10)
    t.join(10)
    assert replan._last_handled(owner) == 4


def test_no_wait_without_an_uncommitted_batch_or_a_running_query(tmp_path):
    ck = _checkpoint(tmp_path, planned=3, committed=3)
    owner = SimpleNamespace(id="a", last_batch=None, checkpoint_dir=ck)
    replan._await_replayed(owner, SimpleNamespace(is_active=True), timeout=60)  # returns at once
    other = tmp_path / "other"
    other.mkdir()
    ck = _checkpoint(other, planned=2, committed=1)
    pending = SimpleNamespace(id="b", last_batch=None, checkpoint_dir=ck)
    replan._await_replayed(pending, SimpleNamespace(is_active=False), timeout=60)  # its query stopped
    assert pending.last_batch is None and replan._last_handled(pending) == 1
