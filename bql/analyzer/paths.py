"""JSON paths of field selectors and output labels.

Field selectors (seed "Extended Descend Operators"): a slice or ``..key`` cannot be the first
component; at most one list-returning step (``list[1:3]..foo`` and ``foo..bar..hoge`` are invalid);
a slice that is invalid independent of the data (step 0, or bounds of one sign running against
the step, such as ``foo[2:1]``) is an error, while always-empty ``[2:2]`` and data-dependent
``[4:-4]`` are fine. Indexes and slice bounds must fit int32 (data/jsonpath.go parses them with
``strconv.ParseInt(s, 10, 32)``). Output labels (``AS x.y[3].z``) take keys and non-negative indexes only.
"""
from __future__ import annotations

from ..ast import FieldRef, IndexStep, KeyStep, Projection, RecursiveStep, SliceStep, Statement
from .context import Context, fail, selects_of, walk


def _check_slice(step: SliceStep, text: str) -> None:
    if step.step == 0:
        raise fail(f"the step of slice '{text}' must not be 0", step)
    start, end = step.start, step.end
    if start is None or end is None or (start < 0) != (end < 0):
        return
    backwards = step.step is not None and step.step < 0
    if (not backwards and start > end) or (backwards and start < end):
        raise fail(f"slice '{text}' can never select an element", step)


def _slice_text(step: SliceStep) -> str:
    parts = ["" if v is None else str(v) for v in (step.start, step.end)]
    if step.step is not None:
        parts.append(str(step.step))
    return "[" + ":".join(parts) + "]"


def check_field_path(ref: FieldRef) -> None:
    """Raise if a field selector's path is statically invalid."""
    if not ref.path:
        return
    first = ref.path[0]
    if not isinstance(first, KeyStep):
        raise fail("a field selector must start with a key, not a slice or '..'", ref)
    list_steps = 0
    for step in ref.path:
        numbers = (step.index,) if isinstance(step, IndexStep) else (
            (step.start, step.end, step.step) if isinstance(step, SliceStep) else ())
        for n in numbers:
            if n is not None and not -(1 << 31) <= n < (1 << 31):
                raise fail(f"index {n} of a field selector is out of the int32 range", step)
        if isinstance(step, (SliceStep, RecursiveStep)):
            list_steps += 1
            if list_steps > 1:
                raise fail("list-returning path operators (slices and '..') cannot be chained", step)
        if isinstance(step, SliceStep):
            _check_slice(step, _slice_text(step))


def check_field_paths(stmt: Statement, ctx: Context) -> None:
    for n in walk(stmt):
        if isinstance(n, FieldRef):
            check_field_path(n)


def check_labels(stmt: Statement, ctx: Context) -> None:
    """Output labels use keys and non-negative indexes, starting with a key."""
    for select in selects_of(stmt):
        for proj in select.projections:
            _check_label(proj)


def _check_label(proj: Projection) -> None:
    alias = proj.alias
    if alias is None or alias.star:
        return
    for i, step in enumerate(alias.steps):
        if isinstance(step, (SliceStep, RecursiveStep)):
            raise fail("slices and '..' cannot be used in an output label", step if step.span else alias)
        if isinstance(step, IndexStep):
            if i == 0:
                raise fail("an output label must start with a key", alias)
            if step.index < 0:
                raise fail(
                    f"negative index [{step.index}] cannot be used in an output label",
                    step if step.span else alias,
                )
