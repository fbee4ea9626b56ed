"""Running ``sbpy check`` (``sbpy.server.cli.check``) on a BQL script from the grammar tests."""
from __future__ import annotations

import argparse
import io
from pathlib import Path


def sbpy_check(path: Path, script: str) -> tuple[int, str]:
    """Write ``script`` to ``path`` and check it as ``sbpy check <path>`` does; its exit code and output."""
    from sbpy.server.cli import check

    path.write_text(script)
    out = io.StringIO()
    return check.main(argparse.Namespace(file=str(path)), stdin=io.StringIO(""), stdout=out), out.getvalue()
