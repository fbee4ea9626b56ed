"""The output order of a generated RSTREAM grouping step, kept from one step to the next."""
from __future__ import annotations

from bisect import bisect_left
from operator import attrgetter
from typing import Any

from ..kernel import _copy

_ITEM_POS = attrgetter("pos")


class OutputOrder:
    """The output relation of the last step the generated step emitted, in output order: the groups'
    items' positions and maps (``table``: the ``GroupTable`` it describes, None when it describes none).

    RSTREAM emits every group at every step, in the order of their first rows, while a step changes one
    or two groups: instead of gathering and sorting every group's item each step, the step applies its
    commits (``replace``, ``drop``) to the order it emitted last. Whatever else changes the items — the
    general path's step, a restore (another table) — makes it describe no table (``forget``), and the
    next step gathers the order again (``rebuild``) as the general path does."""

    __slots__ = ("datas", "flat", "poss", "table")

    def __init__(self) -> None:
        self.table: Any = None
        self.poss: list[int] = []
        self.datas: list[dict[str, Any]] = []
        self.flat = True  # no map holds a container: the maps are emitted themselves

    def forget(self) -> None:
        self.table = None
        self.poss, self.datas = [], []

    def rebuild(self, table: Any) -> None:
        current = [group.item for group in table.groups.values() if group.item is not None]
        current.sort(key=_ITEM_POS)
        self.poss = [it.pos for it in current]
        self.datas = [it.data for it in current]
        self.flat = all(it.flat for it in current)
        self.table = table

    def replace(self, old: Any, new: Any) -> None:
        """A group's item ``old`` (None: a new group) is ``new`` now (None: the group has no row out)."""
        poss, datas = self.poss, self.datas
        if old is not None:
            i = bisect_left(poss, old.pos)
            if i == len(poss) or datas[i] is not old.data:  # not what this order holds: gather it again
                self.forget()
                return
            if new is not None and new.pos == old.pos:
                datas[i] = new.data
                self.flat = self.flat and new.flat
                return
            del poss[i], datas[i]
        if new is not None:
            i = bisect_left(poss, new.pos)
            poss.insert(i, new.pos)
            datas.insert(i, new.data)
            self.flat = self.flat and new.flat

    def drop(self, items: list[Any]) -> None:
        """The items of groups that lost their last row leave the order."""
        for it in items:
            self.replace(it, None)

    def emitted(self) -> list[dict[str, Any]]:
        """The maps of the order as a step emits them (``relation.emitted``): the flat ones themselves, the
        others each its own copy."""
        if self.flat:
            return self.datas[:]
        return [_copy(data) for data in self.datas]
