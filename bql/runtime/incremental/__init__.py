"""The incremental BQL SELECT kernel: per-tuple cost proportional to what the tuple changes.

``IncrementalSelectProcessor`` (``processor.py``) is a drop-in ``SelectProcessor``; the reference kernel
(``runtime/kernel.py``) stays the definition of the semantics and is used for every statement
``ineligible_reason`` rejects. Modules: ``ordered_window`` (head-pruned windows), ``join_keys`` /
``join`` (WHERE analysis, hash join), ``relation`` (rows and their change log), ``emitter``
(ISTREAM/DSTREAM from changes), ``aggregates`` / ``groups`` (incremental GROUP BY); WHERE and plain
select lists of one FROM item run as generated, type-guarded code (``runtime/stage_codegen.py``).
"""
from .eligibility import ineligible_reason
from .processor import IncrementalSelectProcessor

__all__ = ["IncrementalSelectProcessor", "ineligible_reason"]
