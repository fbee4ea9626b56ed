"""Durability helpers shared by the journal, the file sink, persisted statements and UDS storage."""
from __future__ import annotations

import os


def fsync_dir(path: str | os.PathLike[str], missing_ok: bool = False) -> None:
    """fsync a folder, so its entries (a created, renamed or removed file) are durable. A file system that
    cannot sync a folder is not an error; a missing folder is one unless ``missing_ok``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
