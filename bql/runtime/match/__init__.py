"""Row pattern recognition (SQL:2016 MATCH_RECOGNIZE) as a per-tuple processor.

Modules: ``program`` (pattern → VM program), ``exprs`` (MEASURES/DEFINE expressions: navigation,
CLASSIFIER, MATCH_NUMBER, RUNNING/FINAL, aggregates over variables), ``matcher`` (priority-ordered
Pike VM per partition), ``partition`` (reorder buffer and row store), ``output`` (ONE ROW / ALL ROWS
assembly), ``processor`` (the ``Processor`` implementation).
"""
from .processor import DEFAULT_REORDER_BOUND, MatchRecognizeProcessor

__all__ = ["DEFAULT_REORDER_BOUND", "MatchRecognizeProcessor"]
