"""The kernel conformance cases with each SELECT kernel forced.

``test_kernel_conformance.py`` runs them through ``build_processor``'s choice (the incremental kernel
where it qualifies); here the reference is forced and must pass too, and the incremental run must equal
the reference run exactly (outputs with types, dropped tuples with their error text).
"""
from __future__ import annotations

import pytest
from conformance_compare import CASES, same_rows
from incremental_util import canonical
from test_kernel_conformance import _stream_cases

from sbpy.bql.runtime import ProcessorContext, build_processor
from sbpy.bql.runtime.incremental import IncrementalSelectProcessor
from sbpy.bql.runtime.testing import parse_select, run_processor

CASE_PARAMS = _stream_cases()


def _run(case, kernel):
    proc = build_processor(parse_select(case["query"]), ProcessorContext(kernel=kernel))
    return proc, run_processor(proc, case["inputs"], case.get("interleave"), case.get("timestamp_field"))


@pytest.mark.skipif(not CASES.exists(), reason="shared conformance cases are absent")
@pytest.mark.parametrize("case", CASE_PARAMS)
def test_case_with_each_kernel(case):
    _, ref = _run(case, "reference")
    assert same_rows(ref.outputs, case["expected"], case.get("ordered", True), float(case.get("float_tol", 0.0)))
    _, inc = _run(case, "auto")
    assert [canonical(o) for o in inc.outputs] == [canonical(o) for o in ref.outputs]
    assert [(d.error, d.event_type, d.tuple.seq) for d in inc.dropped] == [
        (d.error, d.event_type, d.tuple.seq) for d in ref.dropped]


@pytest.mark.skipif(not CASES.exists(), reason="shared conformance cases are absent")
def test_most_cases_run_incrementally():
    """Guards against the incremental kernel silently never being chosen."""
    chosen = sum(isinstance(_run(p.values[0], "auto")[0], IncrementalSelectProcessor) for p in CASE_PARAMS)
    assert chosen >= len(CASE_PARAMS) // 2, (chosen, len(CASE_PARAMS))
