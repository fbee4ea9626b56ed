"""The conformance runner's value comparison and the location of its case files, for in-process tests.

``same`` / ``same_rows`` mirror ``sbcheck.py``: int and float differ, bool is not int, timestamps
compare as instants, ``ordered: false`` compares multisets. ``CASES`` is ``shared/conformance/cases``
beside the checkout (``../shared`` from the repository root, as in CI), else ``/work/shared``.
"""
from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]
_CANDIDATES = [_REPO.parent / "shared" / "conformance" / "cases", Path("/work/shared/conformance/cases")]
CASES = next((p for p in _CANDIDATES if p.exists()), _CANDIDATES[0])


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


def same(a, b, tol: float) -> bool:
    """Strict BQL value equality as the runner applies it."""
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


def same_rows(got, want, ordered: bool, tol: float) -> bool:
    """Row lists equal in order (``ordered``) or as multisets."""
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
