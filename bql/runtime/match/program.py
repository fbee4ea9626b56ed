"""Row pattern → a small instruction program for the matcher (a regex VM with preference order).

Instructions (tuples, ``pc`` = index):

- ``(CONSUME, var, excluded)``: the current row must satisfy ``var``'s DEFINE condition; it is mapped
  to ``var`` (``excluded`` inside ``{- -}``) and matching goes on at ``pc + 1`` with the next row;
- ``(SPLIT, a, b)``: try ``a`` first, then ``b`` (greedy loops prefer the body, reluctant the exit,
  alternation the leftmost branch);
- ``(JUMP, a)``; ``(START,)`` / ``(END,)`` anchors ``^`` / ``$``; ``(MATCH,)``.

Bounded quantifiers are unrolled (``x{2,4}`` = ``x x (x (x)?)?``), ``PERMUTE`` becomes the alternation
of all orders in lexicographic order, so the program has no counters and a thread is just a ``pc``.
A loop whose body consumed no row comes back to a ``pc`` already visited at this position and is cut,
so an iteration that consumes nothing is never repeated.
"""
from __future__ import annotations

import itertools

from ...ast import (
    PatternAlt, PatternAnchor, PatternConcat, PatternEmpty, PatternExclusion, PatternPermute,
    PatternQuantified, PatternVar,
)
from ...errors import BQLAnalysisError

CONSUME, SPLIT, JUMP, START, END, MATCH = range(6)

MAX_PROGRAM = 100_000


def compile_pattern(term) -> list[tuple]:
    """The program of a row pattern term (ends with MATCH)."""
    code: list = []
    _emit(term, False, code)
    code.append((MATCH,))
    return code


def _emit(term, excluded: bool, code: list) -> None:
    if len(code) > MAX_PROGRAM:
        raise BQLAnalysisError("row pattern is too large after expanding its quantifiers")
    if isinstance(term, PatternVar):
        code.append((CONSUME, term.name.upper(), excluded))
    elif isinstance(term, PatternEmpty):
        return
    elif isinstance(term, PatternAnchor):
        code.append((START,) if term.kind == "start" else (END,))
    elif isinstance(term, PatternConcat):
        for item in term.items:
            _emit(item, excluded, code)
    elif isinstance(term, PatternAlt):
        _emit_alt(list(term.items), excluded, code)
    elif isinstance(term, PatternPermute):
        orders = [PatternConcat(items=tuple(p)) for p in itertools.permutations(term.items)]
        _emit_alt(orders, excluded, code)
    elif isinstance(term, PatternExclusion):
        _emit(term.term, True, code)
    elif isinstance(term, PatternQuantified):
        _emit_quantified(term, excluded, code)
    else:
        raise BQLAnalysisError(f"unsupported row pattern term {type(term).__name__}")


def _emit_alt(items: list, excluded: bool, code: list) -> None:
    jumps = []
    for i, item in enumerate(items):
        last = i == len(items) - 1
        split = len(code)
        if not last:
            code.append(None)
        _emit(item, excluded, code)
        if not last:
            jumps.append(len(code))
            code.append(None)
            code[split] = (SPLIT, split + 1, len(code))
    for j in jumps:
        code[j] = (JUMP, len(code))


def _emit_quantified(q: PatternQuantified, excluded: bool, code: list) -> None:
    lo, hi, greedy = q.min_count, q.max_count, not q.reluctant
    if hi is not None and lo > hi:
        raise BQLAnalysisError("pattern quantifier lower bound must not exceed upper bound")
    if hi is None:
        for _ in range(max(lo - 1, 0)):
            _emit(q.term, excluded, code)
        if lo > 0:  # L: body; SPLIT(L, exit)
            top = len(code)
            _emit(q.term, excluded, code)
            nxt = len(code) + 1
            code.append((SPLIT, top, nxt) if greedy else (SPLIT, nxt, top))
        else:  # L: SPLIT(body, exit); body; JUMP L
            top = len(code)
            code.append(None)
            _emit(q.term, excluded, code)
            code.append((JUMP, top))
            out = len(code)
            code[top] = (SPLIT, top + 1, out) if greedy else (SPLIT, out, top + 1)
        return
    for _ in range(lo):
        _emit(q.term, excluded, code)
    patches = []
    for _ in range(hi - lo):
        patches.append(len(code))
        code.append(None)
        _emit(q.term, excluded, code)
    end = len(code)
    for sp in patches:
        code[sp] = (SPLIT, sp + 1, end) if greedy else (SPLIT, end, sp + 1)


def program_variables(code: list) -> set[str]:
    return {op[1] for op in code if op[0] == CONSUME}


def static_closures(code: list) -> list[tuple[int, ...]] | None:
    """For an anchor-free program: per ``pc``, the CONSUME / MATCH instructions reachable without
    consuming a row, in preference order (what the run-time closure would find); None otherwise."""
    if any(op[0] in (START, END) for op in code) or len(code) > 4000:
        return None
    out = []
    for pc0 in range(len(code)):
        seen: set = set()
        found: list = []
        stack = [pc0]
        while stack:
            pc = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = code[pc]
            if op[0] == SPLIT:
                stack.append(op[2])
                stack.append(op[1])
            elif op[0] == JUMP:
                stack.append(op[1])
            else:
                found.append(pc)
                if op[0] == MATCH:
                    break
        out.append(tuple(found))
    return out
