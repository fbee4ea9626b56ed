"""Windows (RANGE n TUPLES / SECONDS / MILLISECONDS) and emitters (RSTREAM / ISTREAM / DSTREAM) on their own."""
import datetime as dt

from sbpy.bql.ast import RangeWindow
from sbpy.bql.runtime.emitters import Emitter
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.windows import Entry, Window

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def entry(eid: int, seconds: float = 0.0) -> Entry:
    return Entry(eid, Tuple({"i": eid}, at(seconds)))


def test_tuple_window_keeps_last_n():
    w = Window(RangeWindow(3, "tuples"))
    removed = []
    for i in range(5):
        removed += w.add(entry(i))
    assert [e.eid for e in w] == [2, 3, 4]
    assert [e.eid for e in removed] == [0, 1]
    assert w.prune(at(100)) == []  # timestamps do not matter


def test_time_window_inclusive_both_ends():
    w = Window(RangeWindow(2, "seconds"))
    for i, s in enumerate([0, 1, 2, 3]):
        w.add(entry(i, s))
    removed = w.prune(at(3))
    assert [e.eid for e in w] == [1, 2, 3]  # ts 1 == 3 - 2 is kept
    assert [e.eid for e in removed] == [0]


def test_time_window_fractional_and_milliseconds():
    w = Window(RangeWindow(1.9, "seconds"))
    for i, s in enumerate([0, 1, 2]):
        w.add(entry(i, s))
    w.prune(at(2))
    assert [e.eid for e in w] == [1, 2]
    m = Window(RangeWindow(200, "milliseconds"))
    for i, s in enumerate([0.0, 0.1, 0.25]):
        m.add(entry(i, s))
    m.prune(at(0.25))
    assert [e.eid for e in m] == [1, 2]


def test_window_state_roundtrip():
    w = Window(RangeWindow(2, "tuples"))
    w.add(entry(7, 1.5))
    w2 = Window(RangeWindow(2, "tuples"))
    w2.load(w.state())
    assert [(e.eid, e.tuple.data, e.tuple.ts) for e in w2] == [(7, {"i": 7}, at(1.5))]


def steps(kind, relations):
    em = Emitter(kind)
    return [em.emit(rel) for rel in relations]


A, B = {"v": "a"}, {"v": "b"}


def test_istream_ignores_order_respects_multiplicity():
    assert steps("istream", [[A, B], [B, A]]) == [[A, B], []]
    assert steps("istream", [[B, A, B, A], [A, B, A, A]])[1] == [A]


def test_dstream_multiplicity_doc_example():
    assert steps("dstream", [[A, A, B, A], [B, B, A, A]])[1] == [A]


def test_rstream_emits_everything():
    assert steps("rstream", [[A], [A, B]]) == [[A], [A, B]]


def test_int_and_float_are_equal_rows():
    assert steps("istream", [[{"x": 2}], [{"x": 2.0}]]) == [[{"x": 2}], []]


def test_emitter_state_roundtrip():
    em = Emitter("dstream")
    em.emit([A, B])
    em2 = Emitter("dstream")
    em2.load(em.state())
    assert em2.emit([B]) == [A]
