"""Timeplus-style streaming windows (tumble / hop / session), watermarks, EMIT policies and LIMIT.

A pure-Python per-tuple processor (design/timeplus-semantics.md section 4); ``build_processor`` uses
``WindowProcessor`` for a SELECT with a window function in FROM, a bare stream, or an EMIT clause.

Modules: ``timecol`` (event time in epoch µs, bounds as epoch seconds), ``assign`` (tumble/hop grid),
``watermark`` (max event time, delay, late rule), ``sessions`` (per-key sessions, gap and max),
``panes`` (window instances and their grouped rows), ``emission`` (EMIT policies), ``processor``.
"""
from .processor import WindowProcessor

__all__ = ["WindowProcessor"]
