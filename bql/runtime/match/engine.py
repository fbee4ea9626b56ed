"""Which engine matches a MATCH_RECOGNIZE clause: the deterministic automaton or the matcher.

The automaton (``dfa.py`` + ``runner.py``) gives exactly the matcher's events when the configuration
of live attempts evolves on a row as a function of the row's variable mask alone, which holds when:

- every DEFINE condition is row-local (it reads the current row and rows at fixed physical offsets
  before it: no FIRST/LAST beyond the current row, aggregates, MATCH_NUMBER or other variables' rows);
- no DEFINE condition reads a later row (``NEXT``: its value changes once that row arrives, and the
  matcher evaluates it whenever it steps the row);
- the pattern has no ``^``/``$`` anchors (their truth depends on the position and the end of input);
- there is no WITHIN (it ends attempts by the time span since their first row);
- the program is small enough for the static closures (``program.static_closures``).

MEASURES, ONE ROW / ALL ROWS PER MATCH, empty/unmatched rows, exclusion, SUBSET and every AFTER MATCH
SKIP mode are rendered from the match events and work the same with either engine.

``SBPY_MATCH_ENGINE`` (or the processor's ``engine`` argument) = ``matcher`` forces the matcher;
``automaton`` uses the automaton wherever it is exact, driven by ``runner.AutomatonMatcher`` alone;
``compiled`` or ``auto`` (the default) also run the in-order rows of a partition through the compiled
lane (``lane.py``: the reorder buffer, the DEFINE masks and the automaton's steps in one generated
function) where the processor's keys allow it, the runner taking over for everything else.
"""
from __future__ import annotations

import os
from typing import Any

from ...ast import PatternAnchor
from .conditions import RowMasks
from .dfa import Automaton
from .labels import Replayer
from .levels import ROW_LOCAL, max_offsets
from .matcher import Matcher, MatchSpec
from .program import static_closures
from .runner import AutomatonMatcher

ENGINE_ENV = "SBPY_MATCH_ENGINE"
ENGINES = ("auto", "compiled", "automaton", "matcher")


def requested_engine(engine: str | None) -> str:
    """The engine asked for: the argument, else ``$SBPY_MATCH_ENGINE``, else ``auto``."""
    value = (engine if engine is not None else os.environ.get(ENGINE_ENV, "")).strip().lower() or "auto"
    if value not in ENGINES:
        raise ValueError(f"{ENGINE_ENV} must be one of {', '.join(ENGINES)}, not {value!r}")
    return value


def automaton_obstacle(mr: Any, program: list, level: int, define_exprs: list) -> str | None:
    """Why the automaton would not be exact for this clause (None: it is)."""
    if mr.within is not None:
        return "WITHIN bounds each attempt by time"
    if level != ROW_LOCAL:
        return ("a DEFINE condition reads other rows of the match (FIRST/LAST, an aggregate, "
                "MATCH_NUMBER or another variable)")
    if max_offsets(define_exprs)[1] > 0:
        return "a DEFINE condition reads a later row (NEXT)"
    if any(isinstance(n, PatternAnchor) for n in mr.pattern.walk()):
        return "the pattern has ^ or $ anchors"
    if static_closures(program) is None:
        return "the pattern program is too large"
    return None


def choose(mr: Any, program: list, level: int, define_exprs: list, engine: str | None) -> tuple[bool, str]:
    """(use the automaton?, why the matcher) for a clause and the requested engine."""
    asked = requested_engine(engine)
    if asked == "matcher":
        return False, "the matcher was asked for"
    why = automaton_obstacle(mr, program, level, define_exprs)
    return why is None, why or ""


def wants_lane(engine: str | None) -> bool:
    """Whether the requested engine runs in-order rows through the compiled lane (where it applies)."""
    return requested_engine(engine) in ("auto", "compiled")


def build_engine(mr: Any, spec: MatchSpec, variables: set, define_by_var: dict, define_exprs: list,
                 engine: str | None, unmatched_rows: bool) -> tuple[Any, Automaton | None, str, RowMasks | None]:
    """``(factory(rows) -> partition matcher, the automaton or None, why the matcher, the DEFINE
    masks or None)``."""
    use_automaton, why = choose(mr, spec.program, spec.level, define_exprs, engine)
    if not use_automaton:
        return (lambda rows: Matcher(spec, rows)), None, why, None
    masks = RowMasks(sorted(variables), spec.conds, define_by_var, spec.ctx)
    automaton = Automaton(spec.program, masks.bits, masks.always)
    replayer = Replayer(automaton)
    mask_at = masks.mask_at
    def factory(rows: Any) -> AutomatonMatcher:
        return AutomatonMatcher(spec, automaton, mask_at, replayer, rows, unmatched_rows)
    return factory, automaton, "", masks
