"""The physical plan layer: a consumer's chain planned once into a typed ``QueryPlan`` (``planner``),
printed by ``EXPLAIN`` (``explain``), compiled to Spark work by ``sbpy.bql.spark``."""
from .nodes import Execution, QueryPlan, StagePlan, Tier, Where
from .planner import plan_query

__all__ = ["Execution", "QueryPlan", "StagePlan", "Tier", "Where", "plan_query"]
