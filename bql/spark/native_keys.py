"""The JVM pass's key spec (``JsonScan.Keys``): the paths a native chain reads, and number keys.

A chain asks ``JsonScan`` for the values at some paths of each line: the spec joins them with
``KEY_SEPARATOR``, each a top-level key then its steps, each step ``STEP_SEPARATOR`` followed by ``.key``
or ``[index`` (``path_spec``); ``key_path`` gives the path of a field as the pass can follow it (keys and
indexes from the front; anything else is Python's). A numeric comparison compares *number keys*: 16 hex
digits whose order and equality are those of the doubles (``number_key``, ``JsonScan.numberKey``).
"""
from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from sbpy.bql.ast import IndexStep, KeyStep

from .native_where import Unsupported

KEY_SEPARATOR = "\u0001"
STEP_SEPARATOR = "\u0002"


def number_key(v: float) -> str:
    """``JsonScan.numberKey``: 16 hex digits whose order and equality are those of the (finite) doubles;
    -0.0 is 0.0."""
    bits = struct.unpack(">q", struct.pack(">d", 0.0 if v == 0 else v))[0]
    return f"{(~bits if bits < 0 else bits | (1 << 63)):016x}"


def key_path(steps: Sequence[Any]) -> tuple[str | int, ...]:
    """A field's path as the JVM pass follows it: keys (``.key``, ``["key"]``) and array indexes ``[i >= 0]``;
    ``Unsupported`` for the rest (a negative index, a slice, ``..key``: Python's)."""
    path: list[str | int] = []
    for step in steps:
        if type(step) is KeyStep and KEY_SEPARATOR not in step.key and STEP_SEPARATOR not in step.key:
            path.append(step.key)
        elif type(step) is IndexStep and step.index >= 0:
            path.append(step.index)
        else:
            raise Unsupported("a path step other than a key or an index from the front (or a key holding "
                              "U+0001 or U+0002)")
    return tuple(path)


def path_spec(path: tuple[str | int, ...]) -> str:
    return str(path[0]) + "".join(f"{STEP_SEPARATOR}.{s}" if type(s) is str else f"{STEP_SEPARATOR}[{s}"
                                  for s in path[1:])
