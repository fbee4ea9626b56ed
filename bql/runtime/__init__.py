"""Per-tuple query kernels: ``build_processor`` picks the right one for a SELECT.

- only ``table(...)`` FROM items → ``history.TableQueryProcessor`` (a bounded query that runs once;
  ``table(...)`` next to streams is a window of the BQL kernels, ``history.table_window``);
- a FROM item that is a ``MatchRecognize`` → ``match.MatchRecognizeProcessor``;
- a Timeplus window function in FROM, a bare stream without RANGE, or an EMIT clause →
  ``timeplus.WindowProcessor``;
- ``a LEFT JOIN b ON c`` → ``left_join.LeftJoinProcessor`` (the reference kernel with SQL's LEFT JOIN
  as each step's relation);
- otherwise the BQL kernel: ``incremental.IncrementalSelectProcessor`` when the statement qualifies
  (``incremental.ineligible_reason``) and the reference kernel is not forced
  (``ProcessorContext.kernel="reference"`` or ``SBPY_KERNEL=reference``), else ``kernel.SelectProcessor``;
- ``SELECT ... UNION ALL ...`` → ``union.UnionProcessor`` over one processor per branch;
- a subquery in FROM (a CTE's reference) → ``subquery.SubqueryProcessor`` (a processor per subquery
  feeding the outer SELECT's);
- SensorBee's emitter options (``RSTREAM [LIMIT n]`` ...) → ``emitter_options.EmitterOptionsProcessor``
  around the processor of the same SELECT without them.
"""
from __future__ import annotations

import os
from typing import Any

from ..ast import MatchRecognize, Select, SelectUnion
from ..history_query import is_table_query
from ..timeplus_query import is_timeplus_select
from .processor import Dropped, Processor, ProcessorContext, StepResult, Tuple

__all__ = ["Dropped", "Processor", "ProcessorContext", "StepResult", "Tuple", "build_processor"]


def build_processor(stmt: Select | SelectUnion, context: ProcessorContext | None = None) -> Any:
    """A processor for ``stmt`` (modules of the other kernels are imported only when needed)."""
    context = context or ProcessorContext()
    if isinstance(stmt, SelectUnion):
        from .union import UnionProcessor

        return UnionProcessor([build_processor(s, context) for s in stmt.selects])
    if stmt.emitter_options:  # SensorBee's [LIMIT n] / [EVERY ...] / [SAMPLE x%] over the plain query
        from dataclasses import replace

        from .emitter_options import EmitterOptionsProcessor

        return EmitterOptionsProcessor(build_processor(replace(stmt, emitter_options=()), context),
                                       stmt.emitter_options)
    from .subquery import SubqueryProcessor, has_subquery

    if has_subquery(stmt):
        return SubqueryProcessor(stmt, context)
    if is_table_query(stmt):
        from .history import TableQueryProcessor

        return TableQueryProcessor(stmt, context)
    if any(isinstance(item, MatchRecognize) for item in stmt.from_items):
        from .match import MatchRecognizeProcessor

        return MatchRecognizeProcessor(stmt, context)
    if is_timeplus_select(stmt):
        if stmt.partition_by:  # PARTITION BY: one window processor per substream
            from .timeplus.substreams import SubstreamProcessor

            return SubstreamProcessor(stmt, context)
        from .timeplus import WindowProcessor

        return WindowProcessor(stmt, context)
    if stmt.left_join_on is not None:
        from .left_join import LeftJoinProcessor

        return LeftJoinProcessor(stmt, context)
    from .kernel import SelectProcessor

    if use_incremental(context):
        from .incremental import IncrementalSelectProcessor, ineligible_reason

        if ineligible_reason(stmt, context.functions) is None:
            return IncrementalSelectProcessor(stmt, context)
    return SelectProcessor(stmt, context)


def use_incremental(context: ProcessorContext) -> bool:
    """Whether the incremental SELECT kernel may be chosen (``kernel`` field / ``SBPY_KERNEL``)."""
    if context.kernel == "reference":
        return False
    return os.environ.get("SBPY_KERNEL", "auto").lower() != "reference"
