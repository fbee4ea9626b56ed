"""The UDF examples of the "Server Programming" chapter: ``my_inc``, ``my_join``, ``my_join2``.

    EVAL my_inc("10");                  -- 11 (weak conversion of the generic form)
    EVAL my_join("a", "b", "c", "-");   -- "a-b-c" (strict class form)
    EVAL my_join2([1, "b", "c"], ",");  -- "1,b,c" (elements converted to strings)

>>> from sbpy.plugins import PluginRegistries
>>> regs = PluginRegistries(); register(regs)
>>> f = regs.for_topology("t").functions
>>> f.lookup("my_inc").impl(1.5), f.lookup("my_join").impl(["a", "b"], ","), f.lookup("my_join2").impl([1, "b"], "-")
(2, 'a,b', '1-b')
"""
from __future__ import annotations

from typing import Any

from sbpy.bql.errors import BQLEvaluationError
from sbpy.plugins.api import Udf


def inc(v: int) -> int:
    """``my_inc(v)``: ``v + 1`` with ``v`` converted to int."""
    return v + 1


class Join(Udf):
    """``my_join("a", "b", ..., sep)`` or ``my_join(["a", "b"], sep)``; every value must be a string."""

    arity = (1, None)
    needs_states = False  # runs on Spark workers

    def call(self, ctx: Any, *args: Any) -> str:
        if len(args) == 1:
            return ""
        first = args[0]
        if isinstance(first, str):
            for v in args:
                if not isinstance(v, str):
                    raise BQLEvaluationError("my_join: every argument must be a string")
            return args[-1].join(args[:-1])
        if isinstance(first, list):
            if len(args) != 2:
                raise BQLEvaluationError("wrong number of arguments for my_join(array, sep)")
            sep = args[1]
            if not isinstance(sep, str) or not all(isinstance(v, str) for v in first):
                raise BQLEvaluationError("my_join: the array elements and the separator must be strings")
            return sep.join(first)
        raise BQLEvaluationError("the first argument must be a string or an array")


def join2(words: list[str], sep: str) -> str:
    """``my_join2(array, sep)``: Go's ``strings.Join`` converted generically."""
    return sep.join(words)


def register(regs: Any) -> None:
    regs.add_udf("my_inc", inc)
    regs.add_udf("my_join", Join())
    regs.add_udf("my_join2", join2)
