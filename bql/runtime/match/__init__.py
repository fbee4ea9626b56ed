"""Row pattern recognition (SQL:2016 MATCH_RECOGNIZE) as a per-tuple processor.

Modules: ``program`` (pattern → VM program), ``exprs`` (MEASURES/DEFINE expressions: navigation,
CLASSIFIER, MATCH_NUMBER, RUNNING/FINAL, aggregates over variables), ``levels`` (how much of a match an
expression reads), ``matcher`` (priority-ordered Pike VM per partition: the reference engine),
``engine`` (which engine a clause gets), ``dfa`` / ``runner`` / ``conditions`` / ``labels`` (the
deterministic automaton engine: states, per-partition driver, DEFINE row masks, label replay), ``lane``
(the compiled lane: in-order rows of a partition through the reorder buffer and the automaton in one
generated function),
``partition`` (reorder buffer and row store), ``time_order`` (the buffer's SETTINGS and the global
watermark's clock), ``match_time`` (MATCH_ROWTIME / MATCH_PROCTIME), ``output`` / ``fastpath`` (ONE ROW / ALL ROWS assembly and
its shortcuts), ``processor`` (the ``Processor`` implementation).
"""
from .processor import DEFAULT_REORDER_BOUND, MatchRecognizeProcessor

__all__ = ["DEFAULT_REORDER_BOUND", "MatchRecognizeProcessor"]
