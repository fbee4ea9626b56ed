"""Every stream case of the BQL-kernel conformance files, run in-process (no Spark, no server).

Compared with the conformance runner's rules (``sbcheck.py`` ``same`` / ``same_rows``): int and float
differ, bool is not int, timestamps compare as instants, ``ordered: false`` compares multisets.
"""
import datetime as dt
import math
from pathlib import Path

import pytest
import yaml

CASES = Path("/work/shared/conformance/cases")
FILES = ["bql_eval/aggregates.yaml", "bql_eval/select_paths.yaml", "sensorbee/queries.yaml"]


def _as_time(v):
    if not isinstance(v, str) or len(v) < 19 or v[4] != "-" or "T" not in v:
        return None
    s = v.replace("Z", "+00:00")
    frac = ""
    if "." in s:
        head, rest = s.split(".", 1)
        n = 0
        while n < len(rest) and rest[n].isdigit():
            n += 1
        frac, s = rest[:n], head + rest[n:]
    try:
        t = dt.datetime.fromisoformat(s)
    except ValueError:
        return None
    if t.tzinfo is None:
        return None
    return (int(t.timestamp()), int((frac + "000000000")[:9]) if frac else 0)


def same(a, b, tol):
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= tol
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return True
        ta, tb = _as_time(a), _as_time(b)
        return ta is not None and ta == tb
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    return a is None and b is None


def same_rows(got, want, ordered, tol):
    if len(got) != len(want):
        return False
    if ordered:
        return all(same(g, w, tol) for g, w in zip(got, want))
    left = list(got)
    for w in want:
        for i, g in enumerate(left):
            if same(g, w, tol):
                del left[i]
                break
        else:
            return False
    return True


def _stream_cases():
    if not CASES.exists():
        return []
    out = []
    for rel in FILES:
        for case in yaml.safe_load((CASES / rel).read_text()) or []:
            if "query" in case and "inputs" in case:
                out.append(pytest.param(case, id=f"{rel}::{case['name']}"))
    return out


@pytest.mark.skipif(not CASES.exists(), reason="/work/shared conformance cases are absent")
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
