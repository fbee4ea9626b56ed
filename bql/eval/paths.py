"""JSON Path field selectors compiled into getters.

A getter maps the row's data (a map) to the selected value or ``MISSING`` when a step finds nothing:
a key absent from a map, a key step on a non-map, an index out of range or an index step on a
non-array. Slices are Python-like (``foo[1:2].bar`` is ``[2]``); a slice and ``..key`` (recursive
descent: every value below the current node whose key matches, in depth-first order, without looking
inside a matched value) return a list, and the remaining steps apply to each element. A failing element
makes the whole path MISSING, after a slice as after recursive descent (data/jsonpath.go evaluate:
``list[1:3].foo`` is ``[list[1].foo, list[2].foo]`` and fails as that would); ``foo..x`` without any
``x`` is ``[]``.
"""
from __future__ import annotations

from typing import Any, Callable

from ..ast import IndexStep, KeyStep, RecursiveStep, SliceStep
from ..values import MISSING

Getter = Callable[[Any], Any]


def _identity(v: Any) -> Any:
    return v


def compile_path(steps: tuple) -> Getter:
    """A getter applying ``steps`` to a value (the row data for a field reference)."""
    if len(steps) == 1 and type(steps[0]) is KeyStep:
        key = steps[0].key

        def get_key(v: Any) -> Any:
            if type(v) is dict:
                return v.get(key, MISSING)
            return MISSING

        return get_key
    return _build(steps, 0)


def _build(steps: tuple, i: int) -> Getter:
    if i == len(steps):
        return _identity
    step = steps[i]
    rest = _build(steps, i + 1)
    last = i + 1 == len(steps)
    t = type(step)
    if t is KeyStep:
        key = step.key
        if last:
            def key_last(v: Any) -> Any:
                if type(v) is dict:
                    return v.get(key, MISSING)
                return MISSING
            return key_last

        def key_step(v: Any) -> Any:
            if type(v) is dict:
                r = v.get(key, MISSING)
                return r if r is MISSING else rest(r)
            return MISSING
        return key_step
    if t is IndexStep:
        index = step.index

        def index_step(v: Any) -> Any:
            if type(v) is list:
                n = len(v)
                if -n <= index < n:
                    return rest(v[index])
            return MISSING
        return index_step
    if t is SliceStep:
        sl = slice(step.start, step.end, step.step)
        if step.step == 0:
            return lambda v: MISSING

        def slice_step(v: Any) -> Any:
            if type(v) is not list:
                return MISSING
            out = []
            for x in v[sl]:
                r = rest(x)
                if r is MISSING:
                    return MISSING
                out.append(r)
            return out
        return slice_step
    if t is RecursiveStep:
        key = step.key

        def recursive_step(v: Any) -> Any:
            if type(v) is not dict and type(v) is not list:
                return MISSING
            found: list = []
            _descend(v, key, found)
            out = []
            for x in found:
                r = rest(x)
                if r is MISSING:
                    return MISSING
                out.append(r)
            return out
        return recursive_step
    raise TypeError(f"unknown path step {step!r}")


def _descend(v: Any, key: str, found: list) -> None:
    if type(v) is dict:
        for k, x in v.items():
            if k == key:  # recursiveExtractor: a match is taken, not searched further
                found.append(x)
            elif type(x) is dict or type(x) is list:
                _descend(x, key, found)
    elif type(v) is list:
        for x in v:
            if type(x) is dict or type(x) is list:
                _descend(x, key, found)


def path_text(steps: tuple) -> str:
    """The path as BQL text (``a.b[0]``, ``["x y"]``, ``foo..bar``, ``foo[1:2]``)."""
    out = []
    for i, s in enumerate(steps):
        t = type(s)
        if t is KeyStep:
            if s.bracket or not s.key.isidentifier():
                out.append('["' + s.key.replace('"', '""') + '"]')
            else:
                out.append(("." if i else "") + s.key)
        elif t is IndexStep:
            out.append(f"[{s.index}]")
        elif t is SliceStep:
            parts = ["" if p is None else str(p) for p in (s.start, s.end)]
            text = ":".join(parts) + (f":{s.step}" if s.step is not None else "")
            out.append(f"[{text}]")
        elif t is RecursiveStep:
            out.append(".." + s.key)
    return "".join(out)
