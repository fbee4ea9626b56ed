"""The snapshot-restore property shared by the kernel tests: a processor restored from the snapshot of
another, taken after any prefix of the arrivals, goes on exactly as the one that saw them all."""
from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any

from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import json_ready, parse_select

T0 = _dt.datetime(2024, 1, 1, tzinfo=_dt.UTC)


def feed(proc: Any, arrivals: Sequence[tuple[str, dict]], start: int = 0) -> list[Any]:
    """The JSON-ready outputs of ``proc`` for ``arrivals`` ((input name, data) pairs); arrival ``i``
    (counted from ``start`` + 1) has sequence number ``i`` and time ``T0 + i`` milliseconds."""
    out = []
    for i, (name, data) in enumerate(arrivals, start=start + 1):
        step = proc.process(Tuple(dict(data), T0 + _dt.timedelta(milliseconds=i), i, name))
        out += [json_ready(t.data) for t in step.outputs]
    return out


def assert_restore_midway_continues(query: str, arrivals: Sequence[tuple[str, dict]], cut: int) -> None:
    """Feeding ``arrivals[:cut]`` to one processor of ``query`` and the rest to a second restored from its
    snapshot gives, in all, the outputs of one processor fed everything."""
    whole = feed(build_processor(parse_select(query)), arrivals)
    first = build_processor(parse_select(query))
    head = feed(first, arrivals[:cut])
    second = build_processor(parse_select(query))
    second.restore(first.snapshot())
    assert head + feed(second, arrivals[cut:], cut) == whole
