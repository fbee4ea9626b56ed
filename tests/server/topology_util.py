"""Shared helpers of the Spark-free topology tests: a minimal server context, running a BQL script on a
topology, and reading/writing JSON-lines files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Ctx:
    """What a ``Topology`` needs of the server context without Spark: the data folder (and optionally
    the UDS storage)."""

    def __init__(self, data_dir: Path, uds_storage: Any = None):
        self.data_dir = data_dir
        if uds_storage is not None:
            self.uds_storage = uds_storage


def run(t: Any, script: str) -> list[Any]:
    """Execute every statement of ``script`` on topology ``t``; their results."""
    from sbpy.bql.parser import parse_script

    return [t.execute(p) for p in parse_script(script)]


def write(path: Path, rows: list[Any]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def lines(path: Path) -> list[Any]:
    """The complete JSON lines of ``path`` (a last line the sink is still writing is not one yet)."""
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().split("\n")[:-1] if x]
