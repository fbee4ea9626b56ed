"""The new combinations of one step: a hash join on WHERE's equality conjuncts, or the plain product.

The reference (``SelectProcessor._new_rows``) evaluates WHERE on every combination that contains a new
entry, in ``itertools.product`` order (first FROM item outermost, window order inside), and fails the
step at the first combination whose WHERE raises. A hash join must give the same rows *and* the same
failure, so it is used only when that is provable:

- WHERE is an ``AND`` chain of conjuncts that each read one alias, equalities ``X = Y`` whose sides read
  one alias each (different ones), and constants that evaluate to a bool or NULL; at least one equality.
  ``AND`` and ``=`` never raise on bool/NULL operands, so a combination can only raise through one of its
  entries' one-alias parts. Those parts are evaluated once per entry when it enters its window
  (``JoinIndex.facts``); an entry whose part raises, or whose one-alias conjunct is not a bool or NULL,
  is *irregular*.
- While no irregular entry takes part in the step, a combination outside the buckets has an equality
  that is false and no part that raises: WHERE is false there, so skipping it changes nothing. The
  candidates from the buckets (window order) are checked with the real WHERE.
- Otherwise the step enumerates the full product like the reference (exact errors, exact order).

``JoinIndex`` is plain data (it is pickled in snapshots); ``JoinPlan`` holds the compiled parts.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ...eval import Env, Scope, compile_expr
from ..kernel import Slot, truth
from ..windows import Entry
from .field_access import MISSING, plain_field
from .join_keys import NO_MATCH, join_key, split_where

Combo = tuple[tuple[int, ...], Env]  # (entry ids, the combination's Env)


@dataclass(slots=True)
class EntryFacts:
    """One entry's join keys (aligned with ``JoinPlan.sides[slot]``) and whether it is irregular."""

    keys: tuple[Any, ...]
    irregular: bool


class JoinIndex:
    """The buckets of every equality side and the facts of every windowed entry (plain data)."""

    __slots__ = ("facts", "buckets", "irregular")

    def __init__(self, slots: int, bucket_ids: list[tuple[int, int]]):
        self.facts: dict[int, EntryFacts] = {}
        self.buckets: dict[tuple[int, int], dict[Any, dict[int, Entry]]] = {b: {} for b in bucket_ids}
        self.irregular = [0] * slots


class JoinPlan:
    """How a query's new combinations are found (hash join or plain product)."""

    def __init__(self, where_ast: Any, where: Any, slots: list[Slot], registry: Any = None):
        from ...ast.unparse import unparse

        self.slots = slots
        self.aliases = tuple(s.alias for s in slots)
        self.where = where
        self.hashed = False
        self.key_decides = False
        self.equalities: list[str] = []  # text of the hashed conjuncts, for kernel descriptions
        n = len(slots)
        self.unary: list[list[Any]] = [[] for _ in range(n)]
        self.sides: list[list[tuple[int, Any]]] = [[] for _ in range(n)]  # per slot: (equality, fn)
        self.side_key: list[str | None] = [None] * n  # the field a slot's only side reads, no unary part
        self.links: list[list[tuple[int, int, int] | None]] = []  # [k][s]: (equality, known slot, key pos)
        if where_ast is None or n < 2:
            return
        parts = split_where(where_ast, self.aliases)
        if not parts.equalities or parts.residual or not self._constants_ok(parts.constants, registry):
            return
        scope = Scope(self.aliases, registry=registry)
        slot_of = {a: i for i, a in enumerate(self.aliases)}
        for alias, conj in parts.single:
            self.unary[slot_of[alias]].append(compile_expr(conj, scope))
        pairs: list[tuple[int, int]] = []
        for e, (la, lhs, ra, rhs) in enumerate(parts.equalities):
            sa, sb = slot_of[la], slot_of[ra]
            self.sides[sa].append((e, compile_expr(lhs, scope)))
            self.sides[sb].append((e, compile_expr(rhs, scope)))
            pairs.append((sa, sb))
            self.equalities.append(f"{unparse(lhs)} = {unparse(rhs)}")
        pos = {(e, s): p for s in range(n) for p, (e, _) in enumerate(self.sides[s])}
        for k in range(n):
            row: list[tuple[int, int, int] | None] = []
            for s in range(n):
                link = None
                for e, (sa, sb) in enumerate(pairs):
                    other = sb if sa == s else sa if sb == s else None
                    if other is not None and (other < s or other == k) and other != s:
                        link = (e, other, pos[(e, other)])
                        break
                row.append(link)
            self.links.append(row)
        self.bucket_ids = sorted(pos)
        self.hashed = True
        for s in range(n):
            exprs = [lhs if slot_of[la] == s else rhs for la, lhs, ra, rhs in parts.equalities
                     if s in (slot_of[la], slot_of[ra])]
            field = plain_field(exprs[0], self.aliases) if len(exprs) == 1 and not self.unary[s] else None
            if field is not None and field[0] == self.aliases[s]:
                self.side_key[s] = field[1]
        # WHERE is just ``X = Y`` of two FROM items: equal keys mean WHERE is true (``join_key``)
        self.key_decides = (n == 2 and len(parts.equalities) == 1 and not parts.single
                            and not parts.constants)

    @staticmethod
    def _constants_ok(constants: list[Any], registry: Any) -> bool:
        scope = Scope((), registry=registry)
        for c in constants:
            try:
                value = compile_expr(c, scope)(Env({}))
            except Exception:
                return False
            if value is not None and type(value) is not bool:
                return False
        return True

    def new_index(self) -> JoinIndex:
        return JoinIndex(len(self.slots), self.bucket_ids if self.hashed else [])

    # ------------------------------------------------------------ index maintenance

    def add(self, index: JoinIndex, slot: int, entry: Entry) -> None:
        if not self.hashed:
            return
        name = self.side_key[slot]
        if name is not None:  # one plain-field side, read inline (``field_access``)
            ((e, _),) = self.sides[slot]
            data = entry.tuple.data
            value = data.get(name, MISSING) if type(data) is dict else MISSING
            irregular = value is MISSING  # its closure raises
            if irregular:
                key = NO_MATCH
            else:
                try:
                    key = join_key(value)
                except Exception:
                    irregular, key = True, NO_MATCH
            if key is not NO_MATCH:
                bucket = index.buckets[(e, slot)]
                same = bucket.get(key)
                if same is None:
                    bucket[key] = {entry.eid: entry}
                else:
                    same[entry.eid] = entry
            index.facts[entry.eid] = EntryFacts((key,), irregular)
            if irregular:
                index.irregular[slot] += 1
            return
        env = Env({self.aliases[slot]: entry.tuple})
        irregular = False
        unary = self.unary[slot]
        if unary:
            try:
                for fn in unary:
                    value = fn(env)
                    if value is not None and type(value) is not bool:
                        irregular = True
            except Exception:
                irregular = True
        sides = self.sides[slot]
        if len(sides) == 1:  # one equality reads this FROM item (the common join)
            ((e, fn),) = sides
            try:
                key = join_key(fn(env))
            except Exception:
                irregular, key = True, NO_MATCH
            keys: Any = (key,)
            if key is not NO_MATCH:
                bucket = index.buckets[(e, slot)]
                same = bucket.get(key)
                if same is None:
                    bucket[key] = {entry.eid: entry}
                else:
                    same[entry.eid] = entry
        else:
            keys = []
            for e, fn in sides:
                try:
                    key = join_key(fn(env))
                except Exception:
                    irregular, key = True, NO_MATCH
                keys.append(key)
                if key is not NO_MATCH:
                    index.buckets[(e, slot)].setdefault(key, {})[entry.eid] = entry
            keys = tuple(keys)
        index.facts[entry.eid] = EntryFacts(keys, irregular)
        if irregular:
            index.irregular[slot] += 1

    def remove(self, index: JoinIndex, slot: int, entry: Entry) -> None:
        if not self.hashed:
            return
        facts = index.facts.pop(entry.eid)
        for (e, _), key in zip(self.sides[slot], facts.keys):
            if key is not NO_MATCH:
                bucket = index.buckets[(e, slot)]
                same = bucket[key]
                del same[entry.eid]
                if not same:
                    del bucket[key]
        if facts.irregular:
            index.irregular[slot] -= 1

    # ------------------------------------------------------------ combinations

    def combos(self, index: JoinIndex, new: dict[int, Entry]) -> list[Combo]:
        """The combinations containing a new entry that pass WHERE (raises like the reference)."""
        if len(new) == 1 and self.hashed and len(self.slots) == 2:  # the common join step
            ((k, entry),) = new.items()
            # ``_irregular_involved``: no other entry of FROM item k takes part in the step
            if index.facts[entry.eid].irregular or index.irregular[1 - k]:
                return self._product(new)
            return self._pair(index, k, entry)
        if len(self.slots) == 1:
            (entry,) = new.values()
            env = Env({self.aliases[0]: entry.tuple})
            if self.where is None or truth(self.where(env), "WHERE"):
                return [((entry.eid,), env)]
            return []
        if not self.hashed or self._irregular_involved(index, new):
            return self._product(new)
        out: list[Combo] = []
        order = list(new)
        n = len(self.slots)
        for i, k in enumerate(order):
            skip = {s: new[s].eid for s in order[:i]}
            chosen: list[Entry | None] = [None] * n
            chosen[k] = new[k]
            self._walk(0, k, chosen, skip, index, out)
        return out

    def _pair(self, index: JoinIndex, k: int, entry: Entry) -> list[Combo]:
        """``_walk`` for two FROM items and one new entry (the common join step)."""
        s = 1 - k
        e, _, pos = self.links[k][s]
        key = index.facts[entry.eid].keys[pos]
        bucket = index.buckets[(e, s)].get(key) if key is not NO_MATCH else None
        if not bucket:
            return []
        a0, a1 = self.aliases
        where, decided = self.where, self.key_decides
        out: list[Combo] = []
        mine = entry.tuple
        for other in bucket.values():
            if k == 0:
                env = Env({a0: mine, a1: other.tuple})
                ids = (entry.eid, other.eid)
            else:
                env = Env({a0: other.tuple, a1: mine})
                ids = (other.eid, entry.eid)
            if decided or truth(where(env), "WHERE"):
                out.append((ids, env))
        return out

    def _irregular_involved(self, index: JoinIndex, new: dict[int, Entry]) -> bool:
        for entry in new.values():
            if index.facts[entry.eid].irregular:
                return True
        several = len(new) > 1
        for s, count in enumerate(index.irregular):
            if count and (several or s not in new):
                return True
        return False

    def _walk(self, s: int, k: int, chosen: list, skip: dict[int, int], index: JoinIndex,
              out: list[Combo]) -> None:
        if s == len(chosen):
            env = Env({a: e.tuple for a, e in zip(self.aliases, chosen)})
            if truth(self.where(env), "WHERE"):
                out.append((tuple(e.eid for e in chosen), env))
            return
        if s == k:
            self._walk(s + 1, k, chosen, skip, index, out)
            return
        link = self.links[k][s]
        if link is None:
            candidates: Any = self.slots[s].window.entries
        else:
            e, other, pos = link
            key = index.facts[chosen[other].eid].keys[pos]
            bucket = index.buckets[(e, s)].get(key) if key is not NO_MATCH else None
            if not bucket:
                return
            candidates = list(bucket.values())
        excluded = skip.get(s)
        for entry in candidates:
            if entry.eid != excluded:
                chosen[s] = entry
                self._walk(s + 1, k, chosen, skip, index, out)
        chosen[s] = None

    def _product(self, new: dict[int, Entry]) -> list[Combo]:
        """The reference enumeration (``SelectProcessor._new_rows``), entry for entry."""
        fresh: list[Combo] = []
        order = list(new)
        for i, k in enumerate(order):
            choices = []
            for slot in self.slots:
                if slot.index == k:
                    entries = [new[k]]
                elif slot.index in new and order.index(slot.index) < i:
                    entries = [e for e in slot.window.entries if e.eid != new[slot.index].eid]
                else:
                    entries = list(slot.window.entries)
                choices.append(entries)
            for combo in itertools.product(*choices):
                env = Env({a: e.tuple for a, e in zip(self.aliases, combo)})
                if self.where is None or truth(self.where(env), "WHERE"):
                    fresh.append((tuple(e.eid for e in combo), env))
        return fresh
