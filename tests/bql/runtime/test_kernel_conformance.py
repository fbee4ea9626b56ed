"""Every stream case of the BQL-kernel conformance files, run in-process (no Spark, no server).

Compared with the conformance runner's rules (``sbcheck.py`` ``same`` / ``same_rows``): int and float
differ, bool is not int, timestamps compare as instants, ``ordered: false`` compares multisets.
"""
import pytest
import yaml
from conformance_compare import CASES, same, same_rows  # noqa: F401 (same_rows is shared with sibling tests)

FILES = ["bql_eval/aggregates.yaml", "bql_eval/select_paths.yaml", "sensorbee/queries.yaml"]


def _stream_cases():
    if not CASES.exists():
        return []
    out = []
    for rel in FILES:
        for case in yaml.safe_load((CASES / rel).read_text()) or []:
            if "query" in case and "inputs" in case:
                out.append(pytest.param(case, id=f"{rel}::{case['name']}"))
    return out


@pytest.mark.skipif(not CASES.exists(), reason="shared conformance cases are absent")
@pytest.mark.parametrize("case", _stream_cases())
def test_stream_case(case):
    from sbpy.bql.runtime.testing import run_query

    got = run_query(case["query"], case["inputs"], case.get("interleave"), case.get("timestamp_field"))
    want = case["expected"]
    assert same_rows(got, want, case.get("ordered", True), float(case.get("float_tol", 0.0))), (
        f"got {got} want {want}")


def test_same_rows_semantics():
    assert not same(1, 1.0, 0)
    assert same(2.0, 2.0000000001, 1e-9)
    assert same_rows([{"a": 1}, {"a": 2}], [{"a": 2}, {"a": 1}], False, 0)
    assert not same_rows([{"a": 1}, {"a": 2}], [{"a": 2}, {"a": 1}], True, 0)
