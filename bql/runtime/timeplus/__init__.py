"""Timeplus-style streaming windows (tumble / hop / session), watermarks, EMIT policies and LIMIT.

A pure-Python per-tuple processor (design/timeplus-semantics.md section 4); ``build_processor`` uses
``WindowProcessor`` for a SELECT with a window function in FROM, a bare stream, or an EMIT clause.

Modules: ``timecol`` (event time in epoch µs, bounds as epoch seconds), ``assign`` (tumble/hop grid),
``watermark`` (max event time, delay, late rule), ``sessions`` (per-key sessions, gap and max),
``panes`` (window instances and their grouped rows), ``emission`` (EMIT policies), ``emit_extras``
(``AND TIMEOUT`` / ``AND LAST``), ``streaming_calls`` (``lag``, ``emit_version``), ``ticking`` (the wall
clock, processing-time windows), ``processor``, ``substreams`` (``PARTITION BY``: one processor per
substream; ``build_processor`` picks it for a query with PARTITION BY). The Timeplus syntax beyond the window model is described in docs/timeplus.md.

Native Spark equivalents (what could skip this operator; see design section 5): an aggregating
``tumble``/``hop`` query with ``EMIT AFTER WATERMARK [WITH DELAY d]`` ≈ ``withWatermark(col, d)`` +
``groupBy(window(col, size[, slide]), keys)`` in append mode, and ``session`` without a max duration ≈
``session_window(col, gap)`` — but only approximately: Spark moves the watermark between micro-batches
(per-tuple closing and the aligned late rule are lost), merges touching sessions (we split at
``t == last + gap``), has no session max duration, no end-of-input flush, and ``EMIT ON UPDATE`` maps to
update mode per batch (not per tuple; never with ``session_window``). Exact semantics need this
operator inside the stateful Spark operator.
"""
from .processor import WindowProcessor
from .substreams import SubstreamProcessor

__all__ = ["SubstreamProcessor", "WindowProcessor"]
