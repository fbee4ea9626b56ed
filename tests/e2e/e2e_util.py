"""The in-process Spark topology tests' helpers: ``run``, ``write`` and ``lines`` of the Spark-free topology
tests (tests/server/topology_util.py), re-exported.

pytest puts a test file's own folder on ``sys.path`` (tests/e2e, and tests/ for the root conftest), but
tests/server only once a test there is collected; so this module adds it when it is missing.
"""
from __future__ import annotations

import sys
from pathlib import Path

_SERVER_TESTS = str(Path(__file__).resolve().parents[1] / "server")
if _SERVER_TESTS not in sys.path:
    sys.path.append(_SERVER_TESTS)

from topology_util import lines, run, write  # noqa: E402

__all__ = ["lines", "run", "write"]
