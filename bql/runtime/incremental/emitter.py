"""ISTREAM / DSTREAM from the change of the relation instead of from the whole relation.

The reference (``emitters.Emitter``) keys every row with ``multiset_key`` and, per key,

- ISTREAM emits the occurrences beyond the previous count, in current-relation order: for a key with
  ``c`` current and ``p`` previous rows, the *last* ``c - p`` rows of that key in the current relation;
- DSTREAM emits the last ``p - c`` rows of the key in the previous relation's order (these may be rows
  that are still present: rows with equal keys can differ, e.g. 2 and 2.0);

and the emitted rows come out in relation order. A row containing NaN gets a fresh key every time, so
ISTREAM emits every current NaN row and DSTREAM every previous one, at every emit.

``DeltaEmitter`` keeps the previous relation as one sorted class per key (positions and items) and
touches only the keys of the items that changed. An item has ``pos`` (its place in the relation),
``data`` (the row), ``ekey`` (the multiset key) and ``nan``.
"""
from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from ...values import multiset_key


def has_nan(value: Any) -> bool:
    """Whether a row value contains a float NaN anywhere."""
    t = type(value)
    if t is float:
        return value != value
    if t is dict:
        value = value.values()
    elif t is not list:
        return False
    for v in value:
        t = type(v)
        if t is float:
            if v != v:
                return True
        elif (t is dict or t is list) and has_nan(v):
            return True
    return False


_NULL_KEY = ("null",)


def row_key(data: dict[str, Any]) -> tuple[Any, bool]:
    """``(multiset_key(data), has_nan(data))`` of an output row in one pass (scalars inline)."""
    nan = False
    parts = []
    for k, v in data.items():
        t = type(v)
        if t is int:
            parts.append((k, v))
        elif t is str:
            parts.append((k, ("s", v)))
        elif t is float:
            if v != v:
                nan = True
            parts.append((k, v))
        elif v is None:
            parts.append((k, _NULL_KEY))
        elif t is bool:
            parts.append((k, ("b", v)))
        else:
            nan = nan or has_nan(v)
            parts.append((k, multiset_key(v)))
    return ("m", frozenset(parts)), nan


def row_key_for(labels: list[str]) -> Callable[[dict[str, Any]], tuple[Any, bool]]:
    """``row_key`` for rows with exactly the keys ``labels`` (a generated select list's rows): straight-line
    code keys int, float and str values as ``row_key`` does; a row holding any other value is keyed by
    ``row_key`` itself. The keys are equal to ``row_key``'s (a frozenset of the same pairs)."""
    lines = ["def key(data):", "    nan = False"]
    pairs = []
    for i, label in enumerate(labels):
        v, p = f"v{i}", f"p{i}"
        lines += [f"    {v} = data[{label!r}]", f"    t = type({v})", f"    if t is int: {p} = {v}",
                  f"    elif t is str: {p} = ('s', {v})", "    elif t is float:", f"        {p} = {v}",
                  f"        if {v} != {v}: nan = True", "    else: return row_key(data)"]
        pairs.append(f"({label!r}, {p})")
    lines.append(f"    return ('m', frozenset(({', '.join(pairs)},))), nan")
    scope: dict[str, Any] = {"row_key": row_key}
    exec(compile("\n".join(lines) + "\n", "<row key>", "exec"), scope)  # noqa: S102 - labels are repr()'d
    return scope["key"]


class KeyClass:
    """The items of one key, sorted by position (two parallel lists)."""

    __slots__ = ("pos", "items")

    def __init__(self) -> None:
        self.pos: list[int] = []
        self.items: list[Any] = []

    def __len__(self) -> int:
        return len(self.pos)

    def insert(self, item: Any) -> None:
        pos = self.pos
        if not pos or pos[-1] < item.pos:
            pos.append(item.pos)
            self.items.append(item)
            return
        i = bisect_left(pos, item.pos)
        pos.insert(i, item.pos)
        self.items.insert(i, item)

    def remove(self, item: Any) -> None:
        pos = self.pos
        i = 0 if pos[0] == item.pos else bisect_left(pos, item.pos)
        del pos[i]
        del self.items[i]

    @classmethod
    def of(cls, item: Any) -> "KeyClass":
        """The class of a key whose one item ``item`` was kept bare (``DeltaEmitter.classes``)."""
        out = cls()
        out.pos.append(item.pos)
        out.items.append(item)
        return out


_pos = attrgetter("pos")


class DeltaEmitter:
    """ISTREAM or DSTREAM over a relation given by its changes (plain data, pickled in snapshots).

    ``classes`` maps a key to its ``KeyClass``, or — while the key has one item, as every key of a
    relation of distinct rows does — to that item itself: a large window of distinct rows then keeps
    no class object and two lists per row (memory, and objects for the garbage collector to walk).
    """

    __slots__ = ("kind", "classes", "nans")

    def __init__(self, kind: str):
        if kind not in ("istream", "dstream"):
            raise ValueError(f"DeltaEmitter handles istream and dstream, not {kind!r}")
        self.kind = kind
        self.classes: dict[Any, Any] = {}  # key -> KeyClass, or its one item
        self.nans = KeyClass()

    def holds_exactly(self, items: list[Any]) -> bool:
        """Whether the previous relation is ``items`` (distinct keys, none with NaN), each held as itself
        (bare, or the one item of its key's class)."""
        if self.nans.pos or len(self.classes) != len(items):
            return False
        classes = self.classes
        for item in items:
            cls = classes.get(item.ekey)
            if cls is item:
                continue
            if type(cls) is not KeyClass or len(cls.items) != 1 or cls.items[0] is not item:
                return False
        return True

    def reset(self, items: list[Any]) -> None:
        """Make ``items`` (distinct keys, none with NaN) the previous relation, each kept bare."""
        self.nans = KeyClass()
        self.classes = {item.ekey: item for item in items}

    def apply(self, removed: list[Any], added: list[Any]) -> list[Any]:
        """Replace the previous relation by ``previous - removed + added``; the items to emit, in order."""
        istream = self.kind == "istream"
        if not self.nans.pos:
            if len(added) == 1 and len(removed) <= 1:
                fast = self._one_change(istream, removed[0] if removed else None, added[0])
            elif len(added) + len(removed) <= 8:
                fast = self._distinct_changes(istream, removed, added)
            else:
                fast = None
            if fast is not None:
                return fast
        return self._apply_general(istream, removed, added)

    def apply_one(self, removed: list[Any], new: Any) -> list[Any]:
        """``apply(removed, [new])``, the one-change step tried first."""
        if not self.nans.pos and len(removed) <= 1:
            fast = self._one_change(self.kind == "istream", removed[0] if removed else None, new)
            if fast is not None:
                return fast
        return self.apply(removed, [new])

    def _apply_general(self, istream: bool, removed: list[Any], added: list[Any]) -> list[Any]:
        """``apply`` for any change: per changed key, ``c - p`` from the key's class."""
        out: list[Any] = []
        if not istream:
            out.extend(self.nans.items)
        changes: dict[Any, tuple[list[Any], list[Any]]] = {}
        for item in removed:
            if item.nan:
                self.nans.remove(item)
            else:
                change = changes.get(item.ekey)
                if change is None:
                    change = changes[item.ekey] = ([], [])
                change[0].append(item)
        for item in added:
            if item.nan:
                self.nans.insert(item)
            else:
                change = changes.get(item.ekey)
                if change is None:
                    change = changes[item.ekey] = ([], [])
                change[1].append(item)
        classes = self.classes
        for key, (gone, new) in changes.items():
            cls = classes.get(key)
            if cls is None:
                cls = classes[key] = KeyClass()
            elif type(cls) is not KeyClass:
                cls = classes[key] = KeyClass.of(cls)
            p = len(cls)
            c = p - len(gone) + len(new)
            if not istream and p > c:
                out.extend(cls.items[c - p:])
            for item in gone:
                cls.remove(item)
            for item in new:
                cls.insert(item)
            if istream and c > p:
                out.extend(cls.items[p - c:])
            if not cls.pos:
                del classes[key]
        if istream:
            out.extend(self.nans.items)
        if len(out) > 1:
            out.sort(key=_pos)
        return out

    def _distinct_changes(self, istream: bool, removed: list[Any], added: list[Any]) -> list[Any] | None:
        """``apply`` when no item holds NaN and no two changed items share a key (the common step).

        Each changed key then has one change: a removed item makes DSTREAM emit the last item of its
        class (``c - p`` is 1), an added one makes ISTREAM emit the last item of its class after the
        insertion. None when the condition does not hold (nothing has been changed then).
        """
        keys = set()
        for item in removed:
            if item.nan:
                return None
            keys.add(item.ekey)
        for item in added:
            if item.nan:
                return None
            keys.add(item.ekey)
        if len(keys) != len(removed) + len(added):
            return None
        out: list[Any] = []
        for gone in removed:
            self._remove(istream, gone, out)
        for new in added:
            self._insert(istream, new, out)
        if len(out) > 1:
            out.sort(key=_pos)
        return out

    def _one_change(self, istream: bool, gone: Any, new: Any) -> list[Any] | None:
        """``_distinct_changes`` for one added and at most one removed item (the common step)."""
        if new.nan or (gone is not None and (gone.nan or gone.ekey == new.ekey)):
            return None
        out: list[Any] = []
        if gone is not None:
            self._remove(istream, gone, out)
        self._insert(istream, new, out)
        return out

    def _remove(self, istream: bool, gone: Any, out: list[Any]) -> None:
        """``gone`` leaves its key's class, whose only change it is; DSTREAM emits the class's last item."""
        classes = self.classes
        cls = classes[gone.ekey]
        if type(cls) is not KeyClass:  # the key's one item: ``gone`` itself
            if not istream:
                out.append(cls)
            del classes[gone.ekey]
            return
        if not istream:
            out.append(cls.items[-1])
        cls.remove(gone)
        if not cls.pos:
            del classes[gone.ekey]

    def _insert(self, istream: bool, new: Any, out: list[Any]) -> None:
        """``new`` joins its key's class, whose only change it is; ISTREAM emits the class's last item."""
        classes = self.classes
        cls = classes.get(new.ekey)
        if cls is None:
            classes[new.ekey] = new
            if istream:
                out.append(new)
            return
        if type(cls) is not KeyClass:
            cls = classes[new.ekey] = KeyClass.of(cls)
        cls.insert(new)
        if istream:
            out.append(cls.items[-1])
