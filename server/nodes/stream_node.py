"""A stream node (SensorBee's "box"): ``CREATE STREAM name AS SELECT ...``.

Creating one compiles the SELECT with a dry ``build_processor`` (so every error surfaces at CREATE).
A memoryless stream starts no Spark work: it runs inside the Spark query of the consumer that reads it;
a stream whose outputs depend on earlier tuples starts its own query at CREATE (see ``graph.py``).
Its counters are filled from the query's ``stat`` rows; it becomes ``stopped`` when the query reports
its ``end`` row (all inputs ended) or, if no query runs it, when all its inputs have stopped.
"""
from __future__ import annotations

import re
from typing import Any

from sbpy.bql import ast

from sbpy.bql.spark.buffers import DEFAULT_BUFFER_SIZE, stream_refs

from . import status as st

_HEAD = re.compile(r"\s*create\s+stream\s+[A-Za-z_][A-Za-z0-9_]*\s+as\s+", re.IGNORECASE)


def select_inputs(select: ast.Select | ast.SelectUnion) -> list[str]:
    """The node names a SELECT reads (FROM order, de-duplicated, lower-case)."""
    selects = select.selects if isinstance(select, ast.SelectUnion) else (select,)
    names: list[str] = []
    for s in selects:
        for item in s.from_items:
            if isinstance(item, ast.SubqueryRef):  # a subquery (a CTE) reads what its SELECT reads
                names += [n for n in select_inputs(item.select) if n not in names]
                continue
            if isinstance(item, ast.StreamRef):
                name = item.name
            elif isinstance(item, ast.WindowFunction):
                name = item.stream
            elif isinstance(item, ast.MatchRecognize) and isinstance(item.input, ast.SubqueryRef):
                names += [n for n in select_inputs(item.input.select) if n not in names]
                continue
            elif isinstance(item, ast.WindowFunction) and item.source is not None:
                names += [n for n in select_inputs(item.source.select) if n not in names]
                continue
            elif isinstance(item, ast.MatchRecognize):
                name = item.input.name
            elif isinstance(item, ast.UdsfCall):
                name = _udsf_stream(item)
            else:
                name = None
            if name and name.lower() not in names:
                names.append(name.lower())
    return names


def input_buffer_sizes(select: ast.Select | ast.SelectUnion) -> dict[str, int]:
    """Each stream input's queue size as SensorBee reports it: its ``BUFFER SIZE`` (default 1024; the
    smallest when several FROM items read one input)."""
    sizes: dict[str, int] = {}
    for ref in stream_refs(select):
        size = (ref.window.buffer_size if ref.window is not None else None) or DEFAULT_BUFFER_SIZE
        name = ref.name.lower()
        sizes[name] = min(size, sizes.get(name, size))
    return sizes


def _udsf_stream(item: ast.UdsfCall) -> str | None:
    """A UDSF reads the streams named by its string-constant arguments (SensorBee's convention: the
    first argument); only the first string constant is taken."""
    for arg in item.args:
        value = getattr(arg, "value", None)
        if isinstance(value, str):
            return value
    return None


def select_text(parsed_text: str, stmt: ast.CreateStreamAsSelect) -> str:
    """The SELECT part of a CREATE STREAM statement's text (the stage text Spark workers rebuild)."""
    m = _HEAD.match(parsed_text)
    if m:
        return parsed_text[m.end():].strip().rstrip(";")
    try:
        from sbpy.bql.ast.unparse import unparse

        return unparse(stmt.select)
    except ImportError:  # pragma: no cover
        return parsed_text


class StreamNode:
    """One stream of a topology."""

    kind = "stream"

    def __init__(self, name: str, select: Any, text: str, inputs: list[str]):
        self.name = name
        self.select = select
        self.text = text  # the SELECT text
        self.inputs = inputs
        self.counters = st.Counters()
        self.counters.queue_sizes = input_buffer_sizes(select)
        self.state = st.RUNNING
        self.error: str | None = None
        self.stats_owner: str | None = None  # id of the query whose stat rows this node shows
        # why its own query computes it from its CREATE (``graph.computed_from_create``; None: memoryless,
        # fused into its consumers' queries)
        self.own_query: str | None = None

    def status(self, outputs: list[str]) -> dict[str, Any]:
        return st.stream_status(self.state, self.counters, outputs, self.error)
