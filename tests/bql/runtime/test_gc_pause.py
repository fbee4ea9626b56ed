"""``gc_pause.paused``: the cyclic collector is off while any pause runs and back on after the last."""
from __future__ import annotations

import gc
import threading

import pytest
from sbpy.bql.runtime import gc_pause

pytestmark = pytest.mark.usefixtures("collector_on")  # tests/conftest.py


def test_a_pause_disables_the_collector_and_enables_it_after():
    with gc_pause.paused():
        assert not gc.isenabled()
        assert gc_pause.depth() == 1
    assert gc.isenabled() and gc_pause.depth() == 0


def test_nested_pauses_end_with_the_outermost():
    with gc_pause.paused():
        with gc_pause.paused():
            assert gc_pause.depth() == 2
        assert not gc.isenabled()  # the outer batch still runs
    assert gc.isenabled()


def test_a_failing_batch_still_ends_its_pause():
    with pytest.raises(RuntimeError):
        with gc_pause.paused():
            raise RuntimeError("boom")
    assert gc.isenabled() and gc_pause.depth() == 0


def test_overlapping_pauses_of_two_threads():
    """Two queries' batches overlap: the collector comes back only when both have ended."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first() -> None:
        with gc_pause.paused():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with gc_pause.paused():
            second_in.set()
            first_out.wait(10)
            seen["during"] = gc.isenabled()  # the first batch ended, this one has not
        seen["after"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"during": False, "after": True}


def test_a_collector_disabled_elsewhere_stays_disabled():
    gc.disable()
    with gc_pause.paused():
        pass
    assert not gc.isenabled()
