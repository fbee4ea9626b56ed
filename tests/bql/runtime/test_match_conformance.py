"""Every stream case of conformance/cases/match_recognize/cases.yaml, run in-process (no Spark, no
server), compared like the runner's ``same_rows`` (int and float differ, ``ordered: false`` compares
multisets, ``float_tol``). Statement cases must be rejected by parse + analyze + build."""

import pytest
import yaml

from conformance_compare import CASES as CASES_DIR
from conformance_compare import same_rows

CASES = CASES_DIR / "match_recognize/cases.yaml"


def _cases(kind):
    if not CASES.exists():
        return []
    return [pytest.param(c, id=c["name"]) for c in yaml.safe_load(CASES.read_text()) or [] if kind in c]


@pytest.mark.skipif(not CASES.exists(), reason="shared conformance cases are absent")
@pytest.mark.parametrize("case", _cases("inputs"))
def test_stream_case(case):
    from sbpy.bql.runtime.testing import run_query

    got = run_query(case["query"], case["inputs"], case.get("interleave"), case.get("timestamp_field"))
    want = case["expected"]
    assert same_rows(got, want, case.get("ordered", True), float(case.get("float_tol", 0.0))), (
        f"got {got} want {want}")


@pytest.mark.skipif(not CASES.exists(), reason="shared conformance cases are absent")
@pytest.mark.parametrize("case", _cases("statement"))
def test_statement_case(case):
    from sbpy.bql.errors import BQLError
    from sbpy.bql.runtime import build_processor
    from sbpy.bql.runtime.testing import parse_select

    if case.get("expect_error"):
        with pytest.raises(BQLError):
            build_processor(parse_select(case["statement"]))
    else:
        build_processor(parse_select(case["statement"]))
