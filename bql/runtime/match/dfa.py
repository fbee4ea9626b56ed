"""The pattern program as a lazily built deterministic automaton over the matcher's thread sets.

The matcher (``matcher.py``) runs every match attempt of a partition side by side: live attempts in
start order, each an ordered list of waiting threads (``pc``s), threads reaching a ``pc`` another one
already reached at this position cut (the later one *tainted* if it belongs to another attempt), a
thread reaching MATCH cutting the lower-preference threads of its attempt. When every DEFINE condition
is row-local, what happens to these ``pc`` lists on a row depends on nothing but the lists and the set
of variables whose condition the row satisfies (a bit mask). So the whole configuration
(``State.comps``: one ``pc`` tuple per live attempt, plus ``State.vis``: the ``pc``s already visited at
the current position, which can shadow the closure of an attempt started there) is a state of a
deterministic automaton, and a row is one table look-up (``State.steps[mask]``).

The per-attempt facts the matcher keeps on its thread objects become the edges' side effects:
``Step.keep`` (which live attempts still have threads, in order), ``Step.cand`` (which reached MATCH at
this row: their candidate match now ends after it), ``Step.taint`` (which were shadowed). Histories
(the labels of each thread) are not tracked: the runner re-derives the labels of a match when it is
resolved (``labels.py``).

States and edges are built on first use and interned; past ``MAX_STATES`` the intern table starts
over (states in use stay valid, they are self-contained), so memory stays bounded.
"""
from __future__ import annotations

from .program import CONSUME, MATCH, static_closures

MAX_STATES = 20_000
LISTED_BITS = 6  # up to this many mask bits, a state's ``fused`` is a list indexed by the row mask


class Step:
    """The edge of a state for one row mask (see the module docstring)."""

    __slots__ = ("to", "keep", "cand", "taint", "plain", "lo", "hi", "head_left")

    def __init__(self, to: "State", keep: tuple, cand: tuple, taint: tuple, n: int):
        self.to = to
        self.keep = keep
        self.cand = cand
        self.taint = taint
        self.plain = not cand and not taint and len(keep) == n  # nothing but the pcs changed
        # the kept attempts are ``[lo:hi]`` of the old ones when they are consecutive (else lo = -1)
        contiguous = keep == tuple(range(keep[0], keep[0] + len(keep))) if keep else True
        self.lo, self.hi = ((keep[0], keep[-1] + 1) if keep else (0, 0)) if contiguous else (-1, -1)
        self.head_left = n > 0 and (not keep or keep[0] != 0)  # the first live attempt has no threads


# ``Fused.kind``: what a row does to the runner's bookkeeping beyond the state change
PLAIN, DIES, DIES_TAINTED, GENERAL, ESCAPE, COMPLETES, RESTART, RESTART_TAINTED = range(8)


class Fused:
    """A new attempt at the current row, then the row's step (``Automaton.fuse``): ``to`` the state
    after both; ``kind`` PLAIN (the new attempt lives, nothing else changes), DIES / DIES_TAINTED (the
    new attempt has no threads left — shadowed for the latter — and nothing else changes), GENERAL
    (``edge``: the step of the state with the new attempt), ESCAPE (the new attempt is shadowed or
    matches empty: the runner's ``_new_attempt`` handles it), COMPLETES (a GENERAL step of a state
    with one live attempt that reaches MATCH and has no threads left, the new attempt neither reaching
    MATCH nor shadowed: ``after`` is ``to`` without the live attempts, the state once a match ending
    at this row skipped past its last row), RESTART (a GENERAL step after which only the new attempt
    lives and no other attempt reached MATCH: when no earlier attempt waits with a candidate match
    either, every unresolved attempt before the new one has failed; RESTART_TAINTED: the same with
    the new attempt shadowed)."""

    __slots__ = ("to", "kind", "edge", "after")

    def __init__(self, to: "State | None", kind: int, edge: "Step | None",
                 after: State | None = None):
        self.to = to
        self.kind = kind
        self.edge = edge
        self.after = after


class State:
    """Live attempts' ``pc`` tuples (start order) and the ``pc``s visited at the current position."""

    __slots__ = ("comps", "vis", "needs", "steps", "added", "cleared", "fused")

    def __init__(self, comps: tuple, vis: frozenset, needs: int, masks: int):
        """``masks``: the number of row masks when ``fused`` is a list (``Automaton.listed``), else 0."""
        self.comps = comps
        self.vis = vis
        self.needs = needs            # mask bits the live threads test
        self.steps: dict = {}         # mask & needs -> Step
        self.added: tuple | None = None   # (State, plain, tainted, matched): an attempt started here
        self.cleared: dict = {}       # k -> the state after dropping the first k attempts (vis reset)
        # row mask -> Fused (a new attempt, then the row): a list (None: not built yet) or a dict
        self.fused: list | dict = [None] * masks if masks else {}


class Automaton:
    """Builds and caches the states of one compiled pattern program."""

    def __init__(self, program: list, var_bits: dict[str, int], always: int):
        eps = static_closures(program)
        if eps is None:
            raise ValueError("the program has anchors or is too large for the automaton")
        self.program = program
        self.eps = eps
        self.match_pc = len(program) - 1
        assert program[self.match_pc][0] == MATCH
        # bit[pc]: the mask bit a CONSUME pc tests (``always`` holds the undefined variables' bits)
        self.bit = [var_bits.get(op[1], 0) if op[0] == CONSUME else 0 for op in program]
        self.always = always
        # the states' ``fused`` are lists indexed by the row mask (else dicts) when the masks are few
        self.listed = 1 << len(var_bits) if len(var_bits) <= LISTED_BITS else 0
        self.table: dict = {}
        self.empty = self.state((), frozenset())

    # ------------------------------------------------------------ states

    def state(self, comps: tuple, vis: frozenset) -> State:
        key = (comps, vis)
        st = self.table.get(key)
        if st is None:
            if len(self.table) >= MAX_STATES:
                self.table = {}
            needs = 0
            bit = self.bit
            for threads in comps:
                for pc in threads:
                    needs |= bit[pc]
            st = self.table[key] = State(comps, vis, needs & ~self.always, self.listed)
        return st

    def add(self, st: State) -> tuple:
        """Start an attempt at the current position: ``(state, plain, tainted, matched)`` — its
        closure from ``pc`` 0 is shadowed by ``st.vis`` (then it is tainted); ``matched``: it reached
        MATCH (an empty match); it is live iff the new state has one more attempt; ``plain``: live,
        neither tainted nor matched."""
        if st.added is not None:
            return st.added
        vis = set(st.vis)
        threads = []
        tainted = matched = False
        for t in self.eps[0]:
            if t in vis:
                tainted = True
                continue
            vis.add(t)
            if t == self.match_pc:
                matched = True
                break
            threads.append(t)
        comps = st.comps + (tuple(threads),) if threads else st.comps
        plain = bool(threads) and not tainted and not matched
        st.added = (self.state(comps, frozenset(vis)), plain, tainted, matched)
        return st.added

    def fuse(self, st: State, mask: int) -> Fused:
        """``add`` then ``step`` for a row with mask ``mask`` (cached in ``st.fused``)."""
        added = st.added or self.add(st)
        if not added[1]:
            out = Fused(None, ESCAPE, None)
        else:
            to = added[0]
            m = mask & to.needs
            edge = to.steps.get(m) or self.step(to, m)
            n = len(st.comps)
            kind = GENERAL
            if edge.plain:
                kind = PLAIN
            elif n and not edge.cand and edge.keep == tuple(range(n)):
                kind = DIES if not edge.taint else DIES_TAINTED if edge.taint == (n,) else GENERAL
            elif n and not edge.cand and edge.keep == (n,):
                kind = RESTART_TAINTED if n in edge.taint else RESTART
            elif n == 1 and edge.cand == (0,) and not edge.taint and edge.keep in ((), (1,)):
                kind = COMPLETES
            after = self.clear(edge.to, len(edge.keep)) if kind == COMPLETES else None
            out = Fused(edge.to, kind, edge, after)
        st.fused[mask] = out
        return out

    def clear(self, st: State, k: int) -> State:
        """After a match: the visited set is reset and the first ``k`` live attempts are dropped."""
        out = st.cleared.get(k)
        if out is None:
            out = st.cleared[k] = self.state(st.comps[k:], frozenset())
        return out

    def step(self, st: State, mask: int) -> Step:
        """The edge of ``st`` for a row whose satisfied variables are ``mask`` (``& st.needs``)."""
        edge = st.steps.get(mask)
        if edge is not None:
            return edge
        full = mask | self.always
        bit, eps, match_pc = self.bit, self.eps, self.match_pc
        owner: dict = {}
        comps = []
        keep, cand, taint = [], [], []
        for i, threads in enumerate(st.comps):
            new = []
            tainted = hit = False
            for pc in threads:
                if not full & bit[pc]:
                    continue
                for t in eps[pc + 1]:
                    o = owner.get(t)
                    if o is not None:
                        if o != i:
                            tainted = True
                        continue
                    owner[t] = i
                    if t == match_pc:
                        hit = True
                        break
                    new.append(t)
                if hit:
                    break
            if new:
                keep.append(i)
                comps.append(tuple(new))
            if hit:
                cand.append(i)
            if tainted:
                taint.append(i)
        to = self.state(tuple(comps), frozenset(owner))
        edge = st.steps[mask] = Step(to, tuple(keep), tuple(cand), tuple(taint), len(st.comps))
        return edge
