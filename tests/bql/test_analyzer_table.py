"""The analyzer error table: each statement in tests/fixtures/bql/analyze_errors.txt gives its exact
message at its exact position, or is accepted."""
from __future__ import annotations

from pathlib import Path

import pytest
from analysis_util import analysis_verdict

FIXTURE = Path(__file__).parent.parent / "fixtures" / "bql" / "analyze_errors.txt"


def _entries() -> list[tuple[str, str]]:
    entries, lines = [], []
    for raw in FIXTURE.read_text(encoding="utf-8").splitlines():
        if raw.startswith("=> "):
            entries.append(("\n".join(lines), raw[3:]))
            lines = []
        elif raw.strip() and not raw.startswith("#"):
            lines.append(raw)
    assert not lines, "statement without '=>' line at the end of the fixture"
    return entries


ENTRIES = _entries()


@pytest.mark.parametrize("text,expected", ENTRIES, ids=[f"{i}" for i in range(len(ENTRIES))])
def test_statement(text: str, expected: str) -> None:
    assert analysis_verdict(text) == expected


def test_table_is_substantial() -> None:
    assert sum(e != "ok" for _, e in ENTRIES) >= 50
    assert sum(e == "ok" for _, e in ENTRIES) >= 20
