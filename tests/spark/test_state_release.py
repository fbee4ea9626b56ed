"""``state_release``: a stopped query's state-store providers stay loaded until Spark's next maintenance,
which uploads the snapshots they queued — into a checkpoint folder deleted meanwhile, re-creating it.
Released first, nothing of them is left to write."""
from __future__ import annotations

import shutil

import pytest

from sbpy.bql.spark.state_release import _StateStore, _under, loaded_under, release_under

pytestmark = pytest.mark.spark

BATCHES = 12  # RocksDB's changelog checkpointing queues a snapshot at version 10 (minDeltasForSnapshot)


def _aggregate(spark, root, batches=BATCHES):
    """A grouped count over ``batches`` one-file micro-batches, checkpointed under ``root``."""
    src = root / "in"
    src.mkdir(parents=True)
    for i in range(batches):
        (src / f"{i:03}.json").write_text('{"k": %d}\n{"k": 2}\n' % i)
    q = (spark.readStream.schema("k long").option("maxFilesPerTrigger", 1).json(str(src)).groupBy("k").count()
         .writeStream.outputMode("complete").format("noop").option("checkpointLocation", str(root / "ck"))
         .start())
    q.processAllAvailable()
    return q


def _ids(spark, root):
    return [i for i in _StateStore(spark).loaded() if _under(i, root.resolve())]


def test_a_released_checkpoint_is_not_recreated_by_maintenance(spark, tmp_path):
    kept, released = tmp_path / "kept", tmp_path / "released"
    for root in (kept, released):
        _aggregate(spark, root).stop()
    kept_ids, released_ids = _ids(spark, kept), _ids(spark, released)
    assert kept_ids and released_ids  # loaded after the stop: Spark unloads them in a later maintenance

    # deleted without a release, the maintenance Spark would run later uploads the queued snapshot
    shutil.rmtree(kept)
    store = _StateStore(spark)
    for i in kept_ids:
        store.module.doMaintenanceAndUnload(i)
    assert sorted(p.name for p in kept.rglob("*.zip")) == ["10.zip"] * len(kept_ids)

    assert release_under(spark, released) == len(released_ids)
    assert loaded_under(spark, released) == 0
    shutil.rmtree(released)
    for i in released_ids:
        store.module.doMaintenanceAndUnload(i)
    assert not released.exists()


def test_release_leaves_other_checkpoints_loaded(spark, tmp_path):
    running = _aggregate(spark, tmp_path / "running", batches=2)
    _aggregate(spark, tmp_path / "stopped", batches=2).stop()
    before = loaded_under(spark, tmp_path / "running")
    assert before >= 1
    assert release_under(spark, tmp_path / "stopped") >= 1
    assert loaded_under(spark, tmp_path / "running") == before
    assert loaded_under(spark, tmp_path / "stopped") == 0
    running.stop()
    assert release_under(spark, tmp_path / "nothing-here") == 0


def test_a_spark_without_those_internals_releases_nothing_and_says_so(tmp_path, caplog):
    class NoGateway:  # what a Spark whose StateStore lacks the members read here looks like to the module
        @property
        def sparkContext(self):
            raise RuntimeError("no such member")

    with caplog.at_level("WARNING", logger="sbpy.spark"):
        assert release_under(NoGateway(), tmp_path) == 0
    assert "could not release the state stores" in caplog.text
