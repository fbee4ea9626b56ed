"""The light loop of a one-FROM-item RSTREAM GROUP BY batch (``incremental/group_batch.py``) compared
tuple for tuple with the reference kernel, and its rebuilt state with the general path's.

Runs are forced over every batch (``LightBatch.takes`` always yes) so that
short random streams exercise loading, stopping at a tuple the loop does not take (a NULL or string
value, a float or bool key, a nested tuple, WHERE's fallback, a time going back), the general step for
that tuple, resuming and storing. After every batch the processor's snapshot must be byte-for-byte the
one of a processor that ran the same tuples on the general path (the light loop switched off): the same
objects with the same fields and values, maps in the same order.
"""
from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import pickle
from collections import deque
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from incremental_util import Ledger
from sbpy.bql.functions.builtin_aggregate import naive_float_sum
from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import group_batch
from sbpy.bql.runtime.incremental.aggregates import SumState
from sbpy.bql.runtime.incremental.emitter import DeltaEmitter, KeyClass
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select
from test_generated_kernel_paths import SETTINGS, START, _observed, batch_observed

LIGHT_SELECTS = ["a:k, count(*) AS n, sum(a:x) AS total", "a:k AS k, avg(a:x) AS m, count(a:x) AS c",
                 "count(*) AS n, a:k AS k, count(*) AS n",
                 "sum(a:x) AS s, avg(a:y) AS m, a:k AS k2, sum(a:y) AS t", "count(a:y) AS c, sum(a:x) AS s"]
GLOBAL_SELECTS = ["count(*) AS n, sum(a:x) AS total", "avg(a:x) AS m, count(a:y) AS c, sum(a:y) AS t"]
WHERES = ["", "WHERE a:x < 2", "WHERE a:s = \"p\" OR a:x >= 1", "WHERE a:x + 1 > 1"]
WINDOWS = ["[RANGE 1 TUPLES]", "[RANGE 3 TUPLES]", "[RANGE 7 TUPLES]", "[RANGE 500 MILLISECONDS]",
           "[RANGE 1 SECONDS]"]

# mostly what the loop takes, sometimes (ODD, one value in 20) what stops it
KEYS = st.sampled_from([0, 1, 2, "p", "q"])
NUMBERS = st.sampled_from([0, 1, 2, -1, 1.5, 0.1, 2.5, -0.75, (1 << 53) + 1, (1 << 63) - 1, 0.5,
                           float("nan"), float("inf")])
ODD = st.sampled_from([None, 2.0, True, "p", 1 << 70, 10 ** 400, {"u": 1}])


def _value(draw: Any, common: Any) -> Any:
    return draw(ODD) if draw(st.integers(0, 19)) == 0 else draw(common)


@st.composite
def light_streams(draw: Any) -> list[tuple[Any, int]]:
    """(data, ms): keys and numbers the loop mostly takes, a field missing or a tuple nested now and then,
    time mostly going forward."""
    out = []
    ts = 0
    for _ in range(draw(st.integers(0, 60))):
        ts = max(0, ts + draw(st.sampled_from([0, 100, 250, 100, 600, 100, -300])))
        data: Any = {"k": _value(draw, KEYS), "x": _value(draw, NUMBERS), "y": _value(draw, NUMBERS),
                     "s": draw(st.sampled_from("pq"))}
        for field in ("k", "x", "y"):
            if draw(st.integers(0, 30)) == 0:
                del data[field]
        if draw(st.integers(0, 40)) == 0:
            data = {"x": data}
        out.append((data, ts))
    return out


@pytest.fixture(autouse=True)
def _always_light(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(group_batch.LightBatch, "takes", lambda self, n: True)


def _query(items: str, window: str, where: str, group_by: str = " GROUP BY a:k", emitter: str = "RSTREAM",
           having: str = "") -> str:
    return f"SELECT {emitter} {items} FROM s1 {window} AS a {where}{group_by}{having}"


def _tuples(stream: list[tuple[Any, int]]) -> list[Tuple]:
    return [Tuple(copy.deepcopy(data), START + dt.timedelta(milliseconds=ms), seq, "s1")
            for seq, (data, ms) in enumerate(stream, 1)]


def check_light(query: str, stream: list[tuple[Any, int]], sizes: list[int], restore_at: int = -1) -> int:
    """``stream`` in batches of ``sizes`` (cycled) through the light loop, tuple by tuple through the
    reference kernel and in the same batches through the general path: the same rows, stamps and drops
    for every tuple, the same snapshot after every batch. At batch ``restore_at`` the light processor
    continues from its snapshot restored into a fresh one. Returns how many tuples light runs took."""
    stmt = parse_select(query)
    light = build_processor(stmt, ProcessorContext())
    general = build_processor(stmt, ProcessorContext())
    reference = build_processor(stmt, ProcessorContext(kernel="reference"))
    assert light.grouped is not None and light.grouped.light is not None, query
    general.grouped.light = None
    taken = _counting(light)
    tuples = _tuples(stream)
    start, k = 0, 0
    ledger = Ledger()
    while start < len(tuples):
        batch = tuples[start:start + sizes[k % len(sizes)]]
        if k == restore_at:
            blob = light.snapshot()
            light = build_processor(stmt, ProcessorContext())
            light.restore(blob)
            taken = [taken[0]] + _counting(light)
        want = [_observed(reference, t.data, t.ts, t.seq) for t in batch]
        assert batch_observed(light, "s1", batch, ledger) == want, [t.seq for t in batch]
        assert batch_observed(general, "s1", batch, ledger) == want, [t.seq for t in batch]
        assert _state(light) == _state(general), [t.seq for t in batch]
        start, k = start + len(batch), k + 1
    ledger.check()
    return sum(taken)


def _state(proc: Any) -> Any:
    """The processor's snapshot as plain nested values (every object by its class and fields, every value
    with its type; maps in their order)."""
    return _plain(pickle.loads(proc.snapshot()))


def _plain(o: Any) -> Any:
    t = type(o)
    if t is DeltaEmitter:  # what it holds, not how: a key's one item bare or in a class, keys in any order
        held = [(repr(_plain(key)), [_plain(i) for i in (cls.items if type(cls) is KeyClass else [cls])])
                for key, cls in o.classes.items()]
        return (t.__name__, o.kind, sorted(held), [_plain(item) for item in o.nans.items])
    if t in (int, float, str, bool, type(None), bytes, dt.datetime, dt.timedelta, type):
        return (t.__name__, repr(o))
    if isinstance(o, dict):
        return (t.__name__, [(_plain(k), _plain(v)) for k, v in o.items()])
    if t in (list, tuple, deque):
        return (t.__name__, [_plain(v) for v in o])
    if t in (set, frozenset):
        return (t.__name__, sorted(map(repr, map(_plain, o))))
    if dataclasses.is_dataclass(o):
        return (t.__name__, [(f.name, _plain(getattr(o, f.name))) for f in dataclasses.fields(o)])
    names = [n for c in t.__mro__ for n in getattr(c, "__slots__", ())] or list(vars(o))
    if isinstance(o, SumState):  # its chain is a cache: a known one is the sum it stands for, and not compared
        if o.chain is not None:
            assert repr(o.chain) == repr(naive_float_sum(map(float, o.values.values()))), (o.chain, o.values)
        names.remove("chain")
    return (t.__name__, [(n, _plain(getattr(o, n, None))) for n in names])


def _counting(proc: Any) -> list[int]:
    return counting(proc.grouped.light)


def counting(light: Any) -> list[int]:
    """Count the tuples a light loop (``LightBatch``, ``LightPairs``) takes: wraps its ``loop``."""
    loop = light.loop
    taken = [0]

    def counted(*args: Any) -> Any:
        out = loop(*args)
        taken[0] += len(out[0])
        return out

    light.loop = counted
    return taken


@SETTINGS
@given(st.sampled_from(LIGHT_SELECTS), st.sampled_from(WINDOWS), st.sampled_from(WHERES), light_streams(),
       st.lists(st.integers(1, 20), min_size=1, max_size=6), st.integers(-1, 4))
def test_light_batches_equal_the_reference_and_the_general_state(items, window, where, stream, sizes,
                                                                 restore_at):
    check_light(_query(items, window, where), stream, sizes, restore_at)


@SETTINGS
@given(st.sampled_from(GLOBAL_SELECTS), st.sampled_from(WINDOWS), st.sampled_from(WHERES), light_streams(),
       st.lists(st.integers(1, 20), min_size=1, max_size=6), st.integers(-1, 4))
def test_the_global_group_in_light_batches(items, window, where, stream, sizes, restore_at):
    """Aggregates without GROUP BY: the loop stops before a step would leave the global group without a
    row (its row over zero rows is the general path's)."""
    check_light(_query(items, window, where, group_by=""), stream, sizes, restore_at)


HAVINGS = ["HAVING count(*) > 1", "HAVING sum(a:x) >= 1 OR count(*) = 2", "HAVING avg(a:x) < 1.5",
           "HAVING count(a:y) * 2 BETWEEN 2 AND 5"]
# (emitter, HAVING) of the changed-groups loop: RSTREAM with HAVING, ISTREAM with or without
CHANGED = [("RSTREAM", h) for h in HAVINGS] + [("ISTREAM", h) for h in ["", *HAVINGS]]
KEYED_SELECTS = [items for items in LIGHT_SELECTS if "a:k" in items]  # ISTREAM: the key tells groups apart


@SETTINGS
@given(st.sampled_from(KEYED_SELECTS), st.sampled_from(WINDOWS), st.sampled_from(WHERES),
       st.sampled_from(CHANGED), light_streams(), st.lists(st.integers(1, 20), min_size=1, max_size=6),
       st.integers(-1, 4))
def test_istream_and_having_in_light_batches(items, window, where, changed, stream, sizes, restore_at):
    """ISTREAM (the emitter's state rebuilt from the groups' rows) and HAVING (a group leaving and
    re-entering the output) in the loop over each step's changed groups."""
    emitter, having = changed
    check_light(_query(items, window, where, emitter=emitter, having=" " + having), stream, sizes, restore_at)


@SETTINGS
@given(st.sampled_from(GLOBAL_SELECTS), st.sampled_from(WINDOWS), st.sampled_from(WHERES),
       st.sampled_from(CHANGED), light_streams(), st.lists(st.integers(1, 20), min_size=1, max_size=6),
       st.integers(-1, 4))
def test_istream_and_having_of_the_global_group(items, window, where, changed, stream, sizes, restore_at):
    emitter, having = changed
    check_light(_query(items, window, where, "", emitter, " " + having), stream, sizes, restore_at)


@pytest.mark.parametrize("emitter, having", [("ISTREAM", ""), ("ISTREAM", " HAVING count(*) > 2"),
                                             ("RSTREAM", " HAVING sum(a:x) > 3")])
@pytest.mark.parametrize("window", ["[RANGE 5 TUPLES]", "[RANGE 2 SECONDS]"])
def test_clean_istream_and_having_streams_run_in_the_light_loop(window, emitter, having):
    """Every tuple of a clean stream is taken by the changed-groups loop."""
    stream = [({"k": i % 4 if i % 9 else 7, "x": (i % 5) * 0.5, "y": i}, 100 * i) for i in range(200)]
    query = _query("a:k AS k, count(*) AS n, sum(a:x) AS total", window, "WHERE a:y >= 1", emitter=emitter,
                   having=having)
    assert check_light(query, stream, [50, 37, 113]) == 200


@pytest.mark.parametrize("window", ["[RANGE 1 TUPLES]", "[RANGE 50 MILLISECONDS]"])
def test_a_group_emptied_and_made_again_by_one_step_keeps_its_row(window):
    """A step whose row leaves a group empty and makes it again (the same key) changes no row of ISTREAM's
    relation: nothing is emitted for it (the group's row carries over to the group made again)."""
    stream = [({"k": i // 10, "x": 1}, 100 * i) for i in range(60)]
    query = _query("a:k AS k, count(*) AS n, sum(a:x) AS s", window, "", emitter="ISTREAM")
    assert check_light(query, stream, [60]) == 60


def test_a_nan_row_leaves_istream_to_the_general_step():
    """A NaN sum makes a row the emitter keys afresh at every step: the run is left to the general step."""
    values = {20: float("inf"), 22: float("-inf")}  # k = 0's sum: inf + -inf
    stream = [({"k": i % 2, "x": values.get(i, 1.0)}, 10 * i) for i in range(80)]
    query = _query("a:k AS k, sum(a:x) AS s", "[RANGE 4 TUPLES]", "", emitter="ISTREAM")
    assert check_light(query, stream, [40, 40]) < 80


@pytest.mark.parametrize("window", ["[RANGE 5 TUPLES]", "[RANGE 2 SECONDS]"])
def test_clean_streams_run_in_the_light_loop(window):
    """Every tuple of a clean stream is taken by the light loop (none by the general step)."""
    stream = [({"k": i % 4, "x": i * 0.5, "y": i, "s": "p"}, 100 * i) for i in range(200)]
    query = _query("a:k AS k, count(*) AS n, sum(a:x) AS total, avg(a:y) AS m", window, "WHERE a:x >= 1")
    assert check_light(query, stream, [50, 37, 113]) == 200


def test_after_a_stop_the_loop_resumes_once_the_window_let_the_tuple_go():
    """A NULL value stops the loop; the general step takes that tuple and the window's ten after it (the
    NULL stays in the window that long: the loop cannot load it), the loop the rest."""
    stream = [({"k": i % 3, "x": None if i == 40 else i}, 10 * i) for i in range(100)]
    assert check_light(_query("a:k AS k, sum(a:x) AS s", "[RANGE 10 TUPLES]", ""), stream, [100]) == 89


def test_a_group_made_by_a_float_key_keeps_its_key():
    """A group made by the key 2.0 (the general step's) and kept by 2s after the 2.0 left keeps its key
    2.0 through a light run, as on the general path."""
    stream = [({"k": 2.0, "x": 1}, 0)] + [({"k": 2, "x": i}, 10 * i) for i in range(1, 80)]
    assert check_light(_query("a:k AS k, sum(a:x) AS s", "[RANGE 3 TUPLES]", ""), stream, [1, 2, 77]) > 70


def test_float_sums_keep_the_left_to_right_additions():
    """0.1-style floats: the sum is recomputed in row order, never updated by subtraction."""
    values = [0.1, 0.2, 0.3, 1e16, 1.0, -1e16, 0.7] * 20
    stream = [({"k": "a", "x": v}, 0) for v in values]
    assert check_light(_query("sum(a:x) AS s, avg(a:x) AS m", "[RANGE 4 TUPLES]", ""), stream, [140]) == 140


def test_a_loop_that_raises_leaves_the_batch_to_the_generated_step(monkeypatch):
    """Should the loop raise on a value its checks let through, nothing general has changed: the generated
    step takes the batch's rest and the rows and the state stay the reference's and the general path's."""
    stream = [({"k": i % 3, "x": i}, 10 * i) for i in range(60)]
    query = _query("a:k AS k, sum(a:x) AS s", "[RANGE 10 TUPLES]", "")
    raised = []
    real = group_batch.LightBatch.load

    def load_then_raise(self: Any) -> Any:
        state = real(self)
        loop = self.loop

        def run(tuples: Any, *rest: Any) -> Any:
            loop(list(tuples)[:5], *rest)  # changes the light state, then raises
            raised.append(True)
            raise OverflowError("int too large to convert to float")

        self.loop = run
        return state

    monkeypatch.setattr(group_batch.LightBatch, "load", load_then_raise)
    check_light(query, stream, [25, 35])
    assert len(raised) == 2  # once per batch: the rest of each batch took the generated step


@pytest.mark.parametrize("query", [
    "SELECT ISTREAM count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k",  # two groups' rows equal
    "SELECT DSTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k",
    "SELECT RSTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k HAVING a:k > 1",
    "SELECT ISTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k HAVING max(a:x) > 1",
    "SELECT RSTREAM a:k AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k"
    " HAVING abs(count(*)) > 1",
    "SELECT RSTREAM a:k AS k, max(a:x) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k",
    "SELECT RSTREAM a:k AS k, sum(a:x * 2) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k",
    "SELECT RSTREAM a:k + 1 AS k, count(*) AS n FROM s1 [RANGE 3 TUPLES] AS a GROUP BY a:k",
    "SELECT RSTREAM count(*) AS n, array_agg(a:x) AS xs FROM s1 [RANGE 3 TUPLES] AS a",
])
def test_other_statements_have_no_light_loop(query):
    proc = build_processor(parse_select(query))
    assert proc.grouped is None or proc.grouped.light is None
    assert "light state" not in proc.kernel_description()  # EXPLAIN says which path runs


def test_explain_names_the_light_loop():
    proc = build_processor(parse_select("SELECT RSTREAM avg(price) AS a FROM src [RANGE 5 SECONDS]"))
    assert proc.grouped.light is not None
    assert "a long batch in one loop over light state" in proc.kernel_description()


def test_short_batches_keep_the_generated_step(monkeypatch):
    """Without the forcing fixture: a batch shorter than twice the window stays on the generated step."""
    monkeypatch.undo()
    proc = build_processor(parse_select(
        "SELECT RSTREAM k, count(*) AS n, sum(price) AS total FROM src [RANGE 50 TUPLES] GROUP BY k"))
    taken = _counting(proc)
    tuples = [Tuple({"k": i % 7, "price": 1.5}, START, i + 1, "src") for i in range(160)]
    proc.process_batch("src", tuples[:60])  # the window is empty: 60 >= 2 x 0
    assert taken[0] == 60
    proc.process_batch("src", tuples[60:90])  # 30 < MIN_RUN
    assert taken[0] == 60
    proc.process_batch("src", tuples[90:160])  # 70 < 2 x 50
    assert taken[0] == 60
