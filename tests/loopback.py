"""Loopback ports for tests: every server a test starts binds 127.0.0.1 only.

Lives in ``tests/`` (on ``sys.path`` through the root conftest) so that test modules, helpers such as
``tests/e2e/cluster.py`` and the stress scripts share one copy.
"""
from __future__ import annotations

import socket


def free_port() -> int:
    """A 127.0.0.1 TCP port that was free a moment ago (the OS picks it; the caller binds it next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
