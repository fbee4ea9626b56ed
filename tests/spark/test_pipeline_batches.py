"""``Pipeline`` feeds a sole reader with a batch entry (``Processor.batch_entry``) each run of its input's
tuples in one ``process_batch`` call (``Pipeline._flush``). Its output rows — ``out`` rows with their
times, ``dropped`` rows (input, output and step errors), ``end`` and ``stat`` rows, their order and seqs
— must be exactly those of the same pipeline fed tuple by tuple (``batch_entry_of`` switched off).

Hypothesis draws journal batches: maps with mixed and missing types, undecodable texts, file lines that
are no tuple, an input's end, tuples of a second input, and the pipeline's state carried from one
``run`` to the next through a snapshot.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sbpy.bql.runtime.incremental import group_batch, pair_batch
from sbpy.bql.spark import journal_format as jf
from sbpy.bql.spark import operator
from sbpy.bql.spark.operator import Pipeline, StageSpec

FILTER = "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8"
GROUPED = "SELECT RSTREAM k, count(*) AS n, sum(price) AS total FROM src [RANGE 4 TUPLES] GROUP BY k"
CHAINS = {
    "filter": [StageSpec("f", FILTER, ("src",))],
    "grouped": [StageSpec("g", GROUPED, ("src",))],
    "filter then grouped": [StageSpec("f", FILTER, ("src",)),
                            StageSpec("g", "SELECT RSTREAM id, count(*) AS n FROM f [RANGE 3 TUPLES] GROUP BY id",
                                      ("f",))],
    "two readers of src": [StageSpec("f", FILTER, ("src",)), StageSpec("g", GROUPED, ("src",))],
    "filter of each input": [StageSpec("f", FILTER, ("src",)),
                             StageSpec("h", "SELECT RSTREAM id FROM other [RANGE 1 TUPLES] WHERE id > 1",
                                       ("other",))],
    "filter reading ts()": [StageSpec("t", "SELECT RSTREAM id, ts() AS at FROM src [RANGE 1 TUPLES] "
                                           "WHERE price < 8", ("src",))],
    "istream": [StageSpec("i", "SELECT ISTREAM id, price FROM src [RANGE 2 TUPLES] WHERE price < 8", ("src",))],
    "dstream": [StageSpec("d", "SELECT DSTREAM id FROM src [RANGE 2 SECONDS]", ("src",))],
    "limit (no batch entry)": [StageSpec("l", "SELECT ISTREAM id FROM src [RANGE 2 TUPLES] LIMIT 3", ("src",))],
    "join": [StageSpec("j", "SELECT ISTREAM a:id AS aid, b:price AS bp FROM src [RANGE 3 TUPLES] AS a, "
                            "other [RANGE 2 SECONDS] AS b WHERE a:k = b:k", ("src", "other"))],
    "join of count windows (mixed runs)": [
        StageSpec("j", "SELECT ISTREAM a:id AS aid, b:id AS bid FROM src [RANGE 3 TUPLES] AS a, "
                       "other [RANGE 2 TUPLES] AS b WHERE a:k = b:k", ("src", "other"))],
    "join, RSTREAM": [StageSpec("j", "SELECT RSTREAM a:id AS aid, b:id AS bid FROM src [RANGE 2 TUPLES] AS a, "
                                     "other [RANGE 2 TUPLES] AS b WHERE a:k = b:k AND b:price < 8",
                                ("src", "other"))],
}
WINDOWED = {  # Timeplus aggregations on their fixed step (``FixedStep.process_batch``)
    "tumble": "SELECT RSTREAM k, count(*) AS n, sum(price) AS total, window_start FROM tumble(src, t, 3s) "
              "GROUP BY k, window_start",
    "hop": "SELECT RSTREAM k, count(*) AS n, max(price) AS hi, window_start FROM hop(src, t, 2s, 4s) "
           "GROUP BY k, window_start",
    "session": "SELECT RSTREAM k, count(*) AS n, window_end FROM session(src, t, 2s) GROUP BY k, window_start, "
               "window_end",
    "tumble over arrival times": "SELECT RSTREAM count(*) AS n, window_start FROM tumble(src, 3s) "
                                 "GROUP BY window_start",
}
CHAINS.update({name: [StageSpec("w", text, ("src",))] for name, text in WINDOWED.items()})

values = st.sampled_from([None, True, 0, 1, 2, 2.0, 7.5, 8, 9.25, -3, math.nan, "7", "a", [1], {"u": 1}])
times = st.sampled_from([0, 1, 2, 2, 3, 5, 5, 8, 9, 2.5, 12, None, "x"])  # late rows, bad times
maps = st.fixed_dictionaries({}, optional={"id": values, "price": values,
                                           "k": st.sampled_from([0, 1, 1, 2, 2.0, "x", None]),
                                           "t": times})


@st.composite
def journal(draw) -> list[list[tuple]]:
    """Batches of journal rows ``(seq, input, ts_us, data, end[, error])``, seqs increasing."""
    batches, seq, ended = [], 0, set()
    for _ in range(draw(st.integers(1, 3))):
        rows = []
        for _ in range(draw(st.integers(0, 25))):
            seq += 1
            name = draw(st.sampled_from(["src", "src", "src", "other"]))
            if name in ended:
                continue
            ts = 1_000_000 * seq + draw(st.sampled_from([0, 0, 500]))
            kind = draw(st.integers(0, 19))
            if kind == 0:
                rows.append((seq, name, ts, "{not json", False))
            elif kind == 1:
                rows.append((seq, name, ts, None, False, "file source: x.jsonl:3: not a JSON object"))
            elif kind == 2:
                rows.append((seq, name, 0, None, True))
                ended.add(name)
            else:
                data = draw(maps)
                rows.append((seq, name, ts, data if draw(st.booleans()) else jf.encode_data(data), False))
        batches.append(rows)
    return batches


def _run(stages: list[StageSpec], batches: list[list[tuple]], lazy: bool = False) -> list[list[tuple]]:
    """Each batch's output rows; the state goes from one batch to the next through a snapshot. ``lazy``:
    the pipeline's tuples make their datetimes when read (``Pipeline.lazy_times``)."""
    out, state = [], None
    for rows in batches:
        p = Pipeline(stages)
        p.lazy_times = lazy
        if state is not None:
            p.restore(state)
        # a decoded map is the pipeline's own (a kernel may keep it): each run gets a fresh copy
        out.append(p.run([r[:3] + (dict(r[3]) if type(r[3]) is dict else r[3],) + r[4:] for r in rows]))
        state = p.snapshot()
    return out


def _decoded(text: str | None) -> str | None:
    """A row's data decoded and spelled out (NaN made comparable); a text that is no tuple as it is."""
    try:
        return repr(jf.decode_data(text)) if text is not None else None
    except ValueError:
        return text


def _canonical(batches: list[list[tuple]]) -> list[list[tuple]]:
    return [[r[:5] + (_decoded(r[5]),) + r[6:] for r in rows] for rows in batches]


@pytest.mark.parametrize("chain", list(CHAINS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=journal())
def test_batched_runs_give_the_rows_of_tuple_by_tuple(chain, batches, monkeypatch_module):
    stages = CHAINS[chain]
    batched = _run(stages, batches)
    with monkeypatch_module.context() as m:
        m.setattr(operator, "batch_entry_of", lambda proc: None)
        one_by_one = _run(stages, batches)
    assert _canonical(batched) == _canonical(one_by_one)


@pytest.mark.parametrize("chain", list(CHAINS))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=journal())
def test_tuples_timed_when_read_give_the_same_rows(chain, batches):
    """A pipeline whose journal tuples make their datetime only when a stage reads it (``JournalTuple``,
    ``Pipeline.lazy_times``: the stateless reader's) gives the rows, drops and snapshots of one that makes
    every datetime up front — stages reading ``ts()`` and time windows included."""
    assert _canonical(_run(CHAINS[chain], batches, lazy=True)) == _canonical(_run(CHAINS[chain], batches))


@pytest.mark.parametrize("chain", ["grouped", "join of count windows (mixed runs)"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=journal())
def test_light_loops_give_the_rows_of_tuple_by_tuple(chain, batches, monkeypatch_module):
    """The light loops (``group_batch``, ``pair_batch``) over every run however short — the join's over
    runs of both its inputs (``Processor.mixed_entry``) —: the rows of the pipeline fed tuple by tuple."""
    stages = CHAINS[chain]
    with monkeypatch_module.context() as m:
        m.setattr(group_batch.LightBatch, "takes", lambda self, n: True)
        m.setattr(pair_batch.LightPairs, "takes", lambda self, n: True)
        batched = _run(stages, batches)
    with monkeypatch_module.context() as m:
        m.setattr(operator, "batch_entry_of", lambda proc: None)
        one_by_one = _run(stages, batches)
    assert _canonical(batched) == _canonical(one_by_one)


@pytest.mark.parametrize(("chain", "field"), [("filter", "id"), ("grouped", "k"), ("istream", "id")])
def test_an_output_row_that_cannot_be_encoded_is_dropped_in_its_place(chain, field, monkeypatch):
    """An output row the encoding refuses (stood in by an encoder refusing the value 3) is an output
    ``dropped`` row in its place, with the batch's other rows unchanged — batched as one by one."""
    def encode(data):
        if data.get(field) == 3:
            raise TypeError("Integer exceeds 64-bit range")
        return jf.encode_data(data)

    rows = [(i, "src", 1000 * i, {"id": i, "k": i % 5, "price": i % 9}, False) for i in range(1, 13)]

    def run():
        p = Pipeline(CHAINS[chain])
        p.encode_out = encode
        return p.run([r[:3] + (dict(r[3]),) + r[4:] for r in rows])

    batched = run()
    monkeypatch.setattr(operator, "batch_entry_of", lambda proc: None)
    assert batched == run()
    dropped = [r for r in batched if r[0] == "dropped"]
    assert dropped
    assert all(r[6] == "TypeError: Integer exceeds 64-bit range" and r[8] == "output" for r in dropped)


def test_a_map_emitted_again_is_encoded_once(monkeypatch):
    """RSTREAM GROUP BY emits every group each tuple, an unchanged group as the map the previous tuple
    emitted: the pipeline encodes that map once and writes its text again — the rows one by one give."""
    calls = []

    def encode(data):
        calls.append(data)
        return jf.encode_data(data)

    rows = [(i, "src", 1000 * i, {"id": i, "k": i % 5, "price": i % 9}, False) for i in range(1, 41)]

    def run():
        p = Pipeline(CHAINS["grouped"])
        p.encode_out = encode
        return p.run([r[:3] + (dict(r[3]),) + r[4:] for r in rows])

    batched = run()
    encoded, calls[:] = len(calls), []
    outs = [r for r in batched if r[0] == "out"]
    monkeypatch.setattr(operator, "batch_entry_of", lambda proc: None)
    assert batched == run()
    assert len(calls) == len(outs) > 3 * 40  # one by one: every row encoded
    assert encoded <= 2 * 40  # batched: the new and the moved group's maps of each tuple


def test_a_join_takes_runs_of_both_its_inputs(monkeypatch):
    """A join whose inputs are read by it alone gets each run of them, interleaved, in one call."""
    calls = []
    real = Pipeline._flush

    def flush(self, entry, k, name, tuples, stamps):
        calls.append((name, [t.input for t in tuples]))
        return real(self, entry, k, name, tuples, stamps)

    monkeypatch.setattr(Pipeline, "_flush", flush)
    p = Pipeline(CHAINS["join of count windows (mixed runs)"])
    rows = [(i + 1, "src" if i % 2 == 0 else "other", 1_000_000 * (i + 1), {"id": i, "k": i % 3}, False)
            for i in range(6)]
    p.run(rows)
    assert calls == [(None, ["src", "other"] * 3)]


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as m:
        yield m


@pytest.mark.parametrize("name", [*WINDOWED, "filter", "grouped", "istream", "dstream", "join", "join, RSTREAM",
                                  "join of count windows (mixed runs)",
                                  "limit (no batch entry)"])
def test_which_stages_have_a_batch_entry(name):
    entry = operator.batch_entry_of(Pipeline(CHAINS[name]).processors[0])
    assert (entry is None) == name.endswith("(no batch entry)")


def test_the_sole_reader_takes_its_tuples_as_one_batch(monkeypatch):
    """The filter's 1,000 tuples reach it in one call, around an undecodable line (its drop in place)."""
    calls = []
    entry = operator.batch_entry_of

    def spy(proc):
        fn = entry(proc)
        return None if fn is None else (lambda name, tuples: calls.append(len(tuples)) or fn(name, tuples))

    monkeypatch.setattr(operator, "batch_entry_of", spy)
    rows = [(i, "src", 1000 * i, {"id": i, "price": i % 10}, False) for i in range(1, 1001)]
    rows.insert(500, (1001, "src", 0, "{bad", False))
    out = Pipeline(CHAINS["filter"]).run(rows)
    assert calls == [500, 500]
    kinds = [r[0] for r in out]
    assert kinds.count("out") == 800 and kinds.count("dropped") == 1
    assert [r[2] for r in out if r[0] == "dropped"] == [1001]
    assert out[400][0] == "dropped"  # after the 400 rows of the first 500 tuples that passed


def test_a_map_emitted_again_after_others_keeps_its_text(monkeypatch):
    """A map emitted again answers later, not only by the next tuple, is written with the text it was given
    (encoded once); past a few answers' worth of held maps the pipeline lets them go — a map emitted after
    that is encoded again — and the rows are the same either way."""
    pool = [{"g": i} for i in range(300)]
    schedule = [[0, 1], [2], [0, 3], [1]] + [[i] for i in range(4, 280)] + [[0, 279]]

    def entry(name, tuples):
        return [[pool[i] for i in schedule[t.seq - 1]] for t in tuples]

    calls = []

    def encode(data):
        calls.append(data["g"])
        return jf.encode_data(data)

    monkeypatch.setattr(operator, "batch_entry_of", lambda proc: entry)
    p = Pipeline(CHAINS["grouped"])
    p.encode_out = encode
    rows = p.run([(i, "src", 1000 * i, {"id": i}, False) for i in range(1, len(schedule) + 1)])
    outs = [(r[2], jf.decode_data(r[5])["g"]) for r in rows if r[0] == "out"]
    assert outs == [(seq, g) for seq, gs in enumerate(schedule, 1) for g in gs]
    assert calls.count(0) == 2 and calls.count(1) == 1 and calls.count(279) == 1  # 0 let go, 1 kept
    zero = [r[5] for r in rows if r[0] == "out" and r[2] in (1, 3) and jf.decode_data(r[5])["g"] == 0]
    assert len(zero) == 2 and zero[0] is zero[1]  # map 0's text written again: the same str object
