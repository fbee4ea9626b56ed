"""Compiling a ``QueryPlan`` (``sbpy.bql.plan``) to running Spark work.

``query_spec_stages`` turns the plan's stages into the ``StageSpec`` s workers build (each carrying its
analyzed statement, so no worker parses BQL text); ``start_planned`` starts the query the plan's
execution names:

| execution  | Spark work                                                              | module            |
|------------|-------------------------------------------------------------------------|-------------------|
| stateless  | ``sbpy_stateless`` (journal in n partitions, stages run there) → ``foreachBatch`` | stateless_query   |
| sequential | journal → ``groupBy(lit 0).applyInPandasWithState`` → ``foreachBatch``  | query             |
| keyed      | journal → router → ``groupBy(key)`` matcher → tail → ``foreachBatch``    | query, keyed_query|
| driver     | journal → ``foreachBatch`` running the pipeline on the driver            | driver_query      |
"""
from __future__ import annotations

from typing import Any

from sbpy.bql.plan import Execution, QueryPlan

from .operator import StageSpec
from .query import QueryHandle, QuerySpec


def query_spec_stages(plan: QueryPlan, plugins: tuple[str, ...] = ()) -> list[StageSpec]:
    """The worker-side stage specs of ``plan`` (analyzed statements included)."""
    return [StageSpec(s.node, s.text, tuple(s.inputs), plugins=plugins, statement=s.statement)
            for s in plan.stages]


def start_planned(spark: Any, spec: QuerySpec, context: Any = None) -> QueryHandle:
    """Start ``spec`` as ``spec.plan`` says. ``context``: the topology's ``ProcessorContext`` for
    driver executions (its functions, UDSFs and states)."""
    plan: QueryPlan = spec.plan
    if plan.execution is Execution.STATELESS:
        from .stateless_query import start_stateless_query

        return start_stateless_query(spark, spec)
    if plan.execution is Execution.DRIVER:
        from .driver_query import start_driver_query

        return start_driver_query(spark, spec, context)
    from .query import start_query

    spec.tick_ms = plan.tick_ms
    return start_query(spark, spec)
