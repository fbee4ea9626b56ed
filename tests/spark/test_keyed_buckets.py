"""The bucketed per-key operator of a keyed MATCH_RECOGNIZE (``keyed_buckets``, ``keyed_query``).

Without Spark: the bucket count is pinned in the checkpoint, a bucket's cached key views are used only
when the committed stamp is theirs, EXPLAIN names the bucketing. With Spark: each bucket's grouping
value lands in its own shuffle partition (our murmur3 is Spark's), and random streams — mixed key
types, NULL keys, many keys, late rows — give through the keyed Spark plan, over several micro-batches
and a restart from the checkpoint, exactly the sequential operator's rows."""
from __future__ import annotations

import math
from collections import Counter

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sbpy.bql.plan import Execution, Tier
from sbpy.bql.plan.planner import plan_query
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark.keyed_buckets import (
    BUCKETS_FILE,
    LEAD,
    BucketCore,
    KeyLog,
    bucket_of,
    group_values,
    murmur3_int,
    pack_rows,
    pin_buckets,
    unpack_rows,
)
from sbpy.bql.spark.keyed_ops import JournalRouter, KeyedCore, RouterCore
from sbpy.bql.spark.keyed_plan import ALL_KEYS, plan_keyed
from sbpy.bql.spark.operator import Pipeline, StageSpec
from sbpy.bql.spark.query import QuerySpec, start_query
from sbpy.bql.spark.testing import TestJournal

MR = ("SELECT RSTREAM * FROM src MATCH_RECOGNIZE (PARTITION BY k ORDER BY t "
      "MEASURES FIRST(A.t) AS t0, LAST(B.t) AS tb, C.t AS t1, count(B.v) AS nb ONE ROW PER MATCH "
      "PATTERN (A B+ C) DEFINE B AS B.v < PREV(B.v), C AS C.v > PREV(C.v))")
STAGES = [StageSpec("m", MR, ("src",))]


# ---------------------------------------------------------------- without Spark


def test_bucket_count_is_pinned_at_the_first_start(tmp_path):
    ck = tmp_path / "keyed"
    assert pin_buckets(ck, 3) == 3
    assert pin_buckets(ck, 7) == 3  # a restart keeps the recorded count whatever is asked now
    other = tmp_path / "old"
    (other / "commits").mkdir(parents=True)
    (other / "commits" / "0").write_text("v1\n{}")
    with pytest.raises(ValueError, match=BUCKETS_FILE):
        pin_buckets(other, 2)  # batches written with an unknown bucketing
    with pytest.raises(ValueError):
        pin_buckets(tmp_path / "new", 0)


def test_group_values_land_each_bucket_in_its_partition():
    for n in (1, 2, 3, 8, 200):
        values = group_values(n)
        assert len(set(values)) == n
        assert [murmur3_int(v) % n for v in values] == list(range(n))


def _routed(rows):
    """Journal entries for ``rows`` (dicts) of input ``src`` and its end, and the router's rows for them."""
    plan = plan_keyed(STAGES, ("src",))
    entries = [(i + 1, "src", (i + 1) * 1000, jf.encode_data(r), False) for i, r in enumerate(rows)]
    entries.append((len(rows) + 1, "src", 0, None, True))
    return plan, entries, RouterCore(plan).run(entries)


def test_views_are_used_only_under_their_own_stamp():
    rows = [{"k": "a", "t": 0, "v": 5}, {"k": "b", "t": 1, "v": 5}, {"k": "a", "t": 2, "v": 3},
            {"k": "b", "t": 3, "v": 4}, {"k": "a", "t": 4, "v": 9}, {"k": "b", "t": 5, "v": 8}]
    plan, entries, routed = _routed(rows)
    first, second = routed[:2], routed[2:]
    store: dict[str, bytes] = {}
    reads: list[str] = []

    def get(key):
        reads.append(key)
        return store.get(key)

    worker = BucketCore(KeyedCore(plan))
    _, stamp = worker.run(first, None, get, store.__setitem__)
    assert sorted(reads) == sorted(r[10] for r in first)  # new keys: asked once
    reads.clear()
    # a failed attempt of batch 2 (its writes lost) leaves the worker ahead of the committed state
    worker.run(second, stamp, get, lambda k, s: None)
    assert reads == []  # warm: the committed stamp was the worker's
    out, _ = worker.run(second, stamp, get, store.__setitem__)
    assert sorted(reads) == sorted({r[10] for r in second} - {""})  # stamp not the worker's: read back
    reference = Pipeline(STAGES).run(entries)
    assert [jf.decode_data(r[6]) for r in out if r[0] == "out"] == \
        [jf.decode_data(r[5]) for r in reference if r[0] == "out"]
    assert len([r for r in out if r[0] == "out"]) == 2


VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(), st.text(alphabet="ab$\\u\"é ")),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(alphabet="$ab\\u", max_size=3), inner, max_size=3)),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_decode_shortcut_equals_the_tag_walk(value):
    """``decode_data`` skips the tag walk for a text with no ``$`` and no ``\\u`` escape: the value is
    what the walk over the parsed text gives, for texts and bytes."""
    text = jf.encode_data(value)
    walked = jf.decode_data_value(orjson.loads(text))
    assert jf.encode_data(jf.decode_data(text)) == jf.encode_data(walked)
    assert jf.encode_data(jf.decode_data(text.encode())) == jf.encode_data(walked)
    for raw in ('{"\\u0024ts": 5}', '{"a": "\\u0024float"}', '{"$$x": 1}', '{"\\u0024float": "inf"}'):
        assert jf.decode_data(raw) == jf.decode_data_value(orjson.loads(raw))
        assert jf.decode_data(raw.encode()) == jf.decode_data_value(orjson.loads(raw))


def test_explain_names_the_bucketing():
    plan = plan_query(["src"], [("m", MR, ["src"])], force=Execution.KEYED)  # keyed on request (test_plan)
    assert plan.execution is Execution.KEYED
    (stage,) = plan.stages
    assert stage.tier is Tier.KEYED
    assert "bucket" in stage.partitioning and "shuffle.partitions" in stage.partitioning
    assert "keys it touched" in stage.state


# ---------------------------------------------------------------- with Spark


@pytest.mark.spark
def test_spark_places_bucket_values_as_we_compute(spark):
    from pyspark.sql import functions as F

    n = 4
    rows = [(f'[["s","k{i}"]]',) for i in range(40)] + [("",)]
    packs = [p for r in rows for p in pack_rows([(None,) * 10 + r], n)]
    df = spark.createDataFrame(packs, "_b int, rows string")
    got = (df.repartition(n, "_b").select("_b", F.hash(F.col("_b")).alias("h"),
                                          F.spark_partition_id().alias("p")).collect())
    values = group_values(n)
    assert all(r["h"] == murmur3_int(r["_b"]) for r in got)
    assert all(r["p"] == values.index(r["_b"]) for r in got)
    assert len({r["p"] for r in got}) == n


def test_packed_rows_round_trip_by_bucket():
    rows = [("tuple", "src", s, i, 0, s * 10, f'{{"x": {s}}}', None, "src", None, f'[["n","{s % 5}"]]')
            for s in range(30, 0, -1) for i in (1, 0)] + [("end", "m", 31, 0, 0, 0, None, None, None, None, "")]
    packs = pack_rows(rows, 3)
    values = group_values(3)
    for value, text in packs:
        got = [tuple(r) for r in unpack_rows([text])]
        assert got == sorted((r for r in rows if values[bucket_of(r[10], 3)] == value), key=lambda r: (r[2], r[3]))
    assert sorted(tuple(r) for _, t in packs for r in unpack_rows([t])) == sorted(rows)
    assert len(packs) == len({bucket_of(r[10], 3) for r in rows})


def test_the_end_of_input_reaches_every_bucket_and_each_finishes_its_keys_once():
    """A stateless router sends one ALL_KEYS row at the end: every bucket gets a copy, bucket 0's leads;
    a bucket finishes the keys of its log (first seq as idx), the lead ends K, a second end is ignored."""
    rows = [{"k": k, "t": t, "v": v} for t, (k, v) in enumerate([("a", 5), ("b", 5), ("a", 3), ("c", 9),
                                                                   ("b", 4), ("a", 2)])]
    plan, entries, _ = _routed(rows)
    routed = JournalRouter(plan).run(entries)
    assert [r for r in routed if r[10] == ALL_KEYS] == [("eof", "src", 7, 6, 0, 0, None, None, "src", None,
                                                         ALL_KEYS)]
    assert not [r for r in routed if r[0] == "end"]  # the buckets end K
    packs = {value: unpack_rows([text]) for value, text in pack_rows(routed, 3)}
    assert set(packs) == set(group_values(3))  # every bucket, even one without keys
    leads = [v for v, brows in packs.items() if any(r[9] == LEAD for r in brows)]
    assert leads == [group_values(3)[0]]
    core = KeyedCore(plan)
    out, logs = [], {}
    for value, brows in packs.items():
        store: dict[str, bytes] = {}
        logs[value] = log = KeyLog()
        got, stamp = BucketCore(core).run(brows, None, store.get, store.__setitem__, log=log)
        out += got
        assert log.ended() and sorted(log.first.values()) == sorted(
            r[2] for r in brows if r[0] == "tuple" and r[2] == min(x[2] for x in brows if x[10] == r[10]))
        again, _ = BucketCore(core).run([r for r in brows if r[10] == ALL_KEYS], stamp, store.get,
                                        store.__setitem__, log=log)
        assert [r[0] for r in again] == ["stat"]  # ended already: nothing finished twice
    assert sorted(k for log in logs.values() for k in log.first) == sorted({r[10] for r in routed
                                                                             if r[0] == "tuple"})
    assert [r[0] for r in out].count("end") == 1
    out.sort(key=lambda r: (r[2], r[3], r[4]))
    reference = Pipeline(STAGES).run(entries)
    assert [jf.decode_data(r[6]) for r in out if r[0] == "out"] == \
        [jf.decode_data(r[5]) for r in reference if r[0] == "out"]


KEYS = st.one_of(st.sampled_from(["a", "b", 1, 1.0, 2, True, None, [1, "x"], {"m": 1}, ""]),
                 st.integers(0, 400).map(lambda i: f"k{i}"))


@st.composite
def streams(draw):
    """Rows ``{k, t, v}``: mixed key types (1 and 1.0 one partition, NULL a partition), optionally many
    keys, ``t`` increasing with some rows stepping back (late ones are dropped), a missing ``k``."""
    n = draw(st.integers(20, 160))
    keys = draw(st.lists(KEYS, min_size=1, max_size=draw(st.sampled_from([3, 60]))))
    rows, t = [], 0
    for _ in range(n):
        t += draw(st.integers(0, 3))
        row = {"t": t - draw(st.sampled_from([0, 0, 0, 0, 1, 40])), "v": draw(st.integers(0, 6))}
        k = draw(st.sampled_from(keys))
        if not (k is None and draw(st.booleans())):
            row["k"] = k
        rows.append(row)
    return rows


def _summary(rows):
    outs = [r["data"] for r in rows if r["kind"] == "out"]
    dropped = Counter((r["node"], jf.encode_data(r["data"]) if r["data"] is not None else None, r["error"],
                       r["input"], r["event"]) for r in rows if r["kind"] == "dropped")
    sent = sum(r["data"]["sent"] for r in rows if r["kind"] == "stat" and r["node"] == "m")
    received = sum(r["data"]["received"].get("src", 0) for r in rows if r["kind"] == "stat" and r["node"] == "m")
    return outs, dropped, sent, received, sorted(r["node"] for r in rows if r["kind"] == "end")


def _reference(journal_dir, upto):
    rows = Pipeline(STAGES).run(jf.read_entries(journal_dir, ["src"], 0, upto))
    cols = ["kind", "node", "seq", "idx", "ts", "data", "error", "input", "event"]
    out = [dict(zip(cols, r)) for r in sorted(rows, key=lambda r: (r[2], r[3]))]
    for r in out:
        r["data"] = jf.decode_data(r["data"]) if r["data"] is not None else None
    return out


@pytest.mark.spark
@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(rows=streams(), cut=st.floats(0.2, 0.8), per_batch=st.integers(7, 40))
def test_random_streams_keyed_on_spark_equal_the_sequential_operator(spark, tmp_path_factory, rows, cut,
                                                                      per_batch):
    tmp = tmp_path_factory.mktemp("kb")
    journal = TestJournal(tmp / "journal")
    got: list[dict] = []
    batches: list[int] = []

    def on_batch(batch_id, out):
        batches.append(batch_id)
        got.extend(out)

    spec = QuerySpec(query_id="t.keyed.buckets", journal_dir=tmp / "journal", inputs=("src",), stages=STAGES,
                     checkpoint_dir=tmp / "ck", on_batch=on_batch, topology="t",
                     max_seqs=per_batch, keyed_partitions=3)
    half = math.ceil(len(rows) * cut)
    journal.append([("src", r) for r in rows[:half]])
    handle = start_query(spark, spec)
    handle.process_all_available()
    handle.stop()
    assert handle.error is None
    journal.append([("src", r) for r in rows[half:]] + [("src", None)])
    handle = start_query(spark, spec)  # restart from the checkpoint
    handle.process_all_available()
    handle.stop()
    assert handle.error is None
    got.sort(key=lambda r: (r["seq"], r["idx"], r.get("sub") or 0))
    want = _reference(tmp / "journal", journal.seq)
    assert _summary(got) == _summary(want)
    assert [r["seq"] for r in got if r["kind"] == "out"] == [r["seq"] for r in want if r["kind"] == "out"]
    assert pin_buckets(tmp / "ck" / "keyed-v4", 99) == 3
    assert len(batches) >= 2
