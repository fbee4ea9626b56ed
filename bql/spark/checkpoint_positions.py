"""Where a query's Spark checkpoint says it is in the journal (read from the driver, no Spark calls).

A micro-batch query reading ``sbpy_journal`` logs, per batch ``N``, the batch's *end* offset in
``<checkpoint>/offsets/N`` (written when the batch is planned, before it runs) and marks the batch done
in ``<checkpoint>/commits/N`` (after its sink callback returned). Its start offset is the one pinned at
the first start (``journal_format.pin_start_seq``). Each offset line is ``{"seq": S}``: the batch read
the journal entries with seq <= S.

- ``planned_seq``: how far the query has *taken* input (the end of its newest planned batch). The
  entries after it are the query's backlog, its input buffer in SensorBee's terms (backpressure).
- ``committed_seq``: where a restart resumes: Spark re-runs an uncommitted batch ``N`` from the end of
  batch ``N-1``, so a restart never reads an entry at or below the end of the newest committed batch.
- ``needed_after``: the lowest such position of a consumer's checkpoint folder, its sub-folder queries
  (a keyed plan's ``keyed-v4``) included: each resumes from its own newest committed batch (a keyed
  plan keeps its keys in its state, it never re-reads its input from the start). Journal entries at or
  below ``needed_after`` of every consumer may be pruned.

Spark writes each log entry to a temp file and renames it, so a listed numeric file is complete.
"""
from __future__ import annotations

import os
from pathlib import Path

import orjson

from .journal_format import START_SEQ_FILE


def _ids(folder: Path) -> list[int]:
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(n) for n in names if n.isdigit())


def batch_end(checkpoint: str | os.PathLike[str], batch_id: int) -> int | None:
    """The journal seq batch ``batch_id`` ends at (its offset log entry; None if absent)."""
    try:
        lines = (Path(checkpoint) / "offsets" / str(batch_id)).read_bytes().splitlines()
    except FileNotFoundError:
        return None
    return int(orjson.loads(lines[-1])["seq"])


def pinned_seq(checkpoint: str | os.PathLike[str]) -> int | None:
    """The start seq pinned at the query's first start (None if it never started)."""
    try:
        return int(orjson.loads((Path(checkpoint) / START_SEQ_FILE).read_bytes())["seq"])
    except FileNotFoundError:
        return None


def planned_seq(checkpoint: str | os.PathLike[str]) -> int | None:
    """The end of the newest planned batch, else the pinned start (None: the query never started)."""
    for batch in reversed(_ids(Path(checkpoint) / "offsets")):
        end = batch_end(checkpoint, batch)
        if end is not None:
            return end
    return pinned_seq(checkpoint)


def planned_after(checkpoint: str | os.PathLike[str]) -> int | None:
    """``planned_seq`` of a consumer's checkpoint folder, or of its sub-folder query (the keyed plan's)
    when the folder itself has none (None: no query of it has pinned a start yet)."""
    folder = Path(checkpoint)
    own = planned_seq(folder)
    if own is not None:
        return own
    try:
        subs = [p for p in folder.iterdir() if p.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        return None
    found = [s for s in (planned_seq(p) for p in subs) if s is not None]
    return max(found) if found else None


def committed_seq(checkpoint: str | os.PathLike[str]) -> int | None:
    """The end of the newest committed batch, else the pinned start (None: the query never started)."""
    for batch in reversed(_ids(Path(checkpoint) / "commits")):
        end = batch_end(checkpoint, batch)
        if end is not None:
            return end
    return pinned_seq(checkpoint)


def last_committed(checkpoint: str | os.PathLike[str]) -> int | None:
    """The id of the newest committed batch (its sink callback returned), None if none is."""
    ids = _ids(Path(checkpoint) / "commits")
    return ids[-1] if ids else None


def uncommitted(checkpoint: str | os.PathLike[str]) -> bool:
    """Whether a planned batch is not committed yet: Spark re-runs it first when the query restarts."""
    planned = _ids(Path(checkpoint) / "offsets")
    return bool(planned) and planned[-1] != last_committed(checkpoint)


def needed_after(checkpoint: str | os.PathLike[str]) -> int | None:
    """The lowest journal seq after which the consumer checkpointed in ``checkpoint`` may still read
    (see the module doc): the ``committed_seq`` of its own query and of each sub-folder query.
    None: no query of it has started (nothing is pinned yet)."""
    folder = Path(checkpoint)
    found = [committed_seq(folder)]
    try:
        subs = [p for p in folder.iterdir() if p.is_dir()]
    except (FileNotFoundError, NotADirectoryError):
        subs = []
    found += [committed_seq(p) for p in subs]
    known = [s for s in found if s is not None]
    return min(known) if known else None
