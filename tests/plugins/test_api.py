"""The plugin author's API: generic and class UDFs, UDAFs, UDSFs, source and sink bases."""
from __future__ import annotations

import datetime as _dt

import pytest

from sbpy.bql.errors import BQLAnalysisError, BQLEvaluationError, BQLExecutionError
from sbpy.bql.eval import evaluate_constant
from sbpy.bql.functions.registry import FunctionSpec
from sbpy.bql.parser import parse_expression
from sbpy.bql.runtime import ProcessorContext
from sbpy.bql.runtime.testing import run_query, run_query_detailed
from sbpy.plugins import PluginRegistries, SinkType, SourceType, Udaf, Udf, Udsf, udf


def plugins(**udfs):
    regs = PluginRegistries()
    for name, fn in udfs.items():
        regs.add_udf(name, fn)
    return regs


def ev(regs, text):
    return evaluate_constant(parse_expression(text), regs.for_topology("t").functions)


def context(regs):
    p = regs.for_topology("t")
    return ProcessorContext(functions=p.functions, udsfs=p.udsfs, topology="t")


# ---------------------------------------------------------------- generic UDFs


def test_weak_conversions():
    def inc(v: int) -> int:
        return v + 1

    def half(v: float) -> float:
        return v / 2

    def shout(s: str) -> str:
        return s.upper()

    regs = plugins(inc=inc, half=half, shout=shout)
    assert ev(regs, 'inc("3")') == 4
    assert ev(regs, "inc(1.5)") == 2
    assert ev(regs, "inc(true)") == 2
    assert ev(regs, "half(3)") == 1.5
    assert ev(regs, "shout(12)") == "12"
    assert ev(regs, "inc(null)") is None  # typed parameters: NULL in, NULL out
    with pytest.raises(BQLEvaluationError, match="cannot convert string 'x' to 'int'"):
        ev(regs, 'inc("x")')


def test_lists_maps_optional_and_any():
    from typing import Any

    def join2(words: list[str], sep: str) -> str:
        return sep.join(words)

    def keys(m: dict) -> list:
        return sorted(m)

    def nvl(v: int | None, d: Any = 0) -> Any:
        return d if v is None else v

    regs = plugins(join2=join2, keys=keys, nvl=nvl)
    assert ev(regs, 'join2([1, 2.5, "x"], "-")') == "1-2.5-x"
    assert ev(regs, 'keys({"b": 1, "a": 2})') == ["a", "b"]
    assert ev(regs, "nvl(null)") == 0
    assert ev(regs, 'nvl(null, "z")') == "z"
    assert ev(regs, 'nvl("7")') == 7
    with pytest.raises(BQLEvaluationError, match="'array'"):
        ev(regs, 'join2("a", "-")')


def test_variadic_and_arity_errors():
    def total(first: int, *rest: int) -> int:
        return first + sum(rest)

    def two(a, b=10):
        return [a, b]

    regs = plugins(total=total, two=two)
    assert ev(regs, 'total(1, "2", 3.0)') == 6
    assert ev(regs, "two(1)") == [1, 10]
    assert ev(regs, "two(1, 2)") == [1, 2]
    with pytest.raises(BQLAnalysisError, match="takes at least 1 argument"):
        ev(regs, "total()")
    with pytest.raises(BQLAnalysisError, match="takes 1 to 2 arguments"):
        ev(regs, "two(1, 2, 3)")


def test_decorator_registers_and_keeps_function():
    regs = PluginRegistries()

    @udf("plus_one", registry=regs)
    def plus_one(v: int) -> int:
        return v + 1

    assert plus_one(1) == 2
    assert plus_one.spec().impl("1") == 2
    assert "PLUS_ONE" in regs.udfs


def test_unsupported_annotation_rejected():
    class Weird:
        pass

    def f(x: Weird):
        return x

    with pytest.raises(TypeError, match="unsupported parameter type"):
        plugins(f=f)


def test_plugin_exception_drops_the_tuple_only():
    def boom(v: int) -> int:
        if v == 2:
            raise RuntimeError("no twos")
        return v

    regs = plugins(boom=boom)
    res = run_query_detailed("SELECT RSTREAM boom(x) AS y FROM s [RANGE 1 TUPLES]",
                             {"s": [{"x": 1}, {"x": 2}, {"x": 3}]}, context=context(regs))
    assert res.outputs == [{"y": 1}, {"y": 3}]
    assert len(res.dropped) == 1 and "no twos" in res.dropped[0].error


# ---------------------------------------------------------------- class form and aggregates


class Pick(Udf):
    def accept(self, arity):
        return arity in (1, 3)

    def call(self, ctx, *args):
        return args[-1]


def test_class_form_arity_gaps_checked_per_call():
    regs = PluginRegistries()
    regs.add_udf("pick", Pick)
    assert ev(regs, "pick(1)") == 1
    assert ev(regs, "pick(1, 2, 3)") == 3
    with pytest.raises(BQLEvaluationError, match="does not accept 2 arguments"):
        ev(regs, "pick(1, 2)")


class WeightedMean(Udaf):
    arity = 2
    agg_params = (0, 1)

    def call(self, ctx, values, weights):
        total = sum(w for w in weights)
        return sum(v * w for v, w in zip(values, weights)) / total


def test_udaf_class_in_group_by():
    regs = PluginRegistries()
    regs.add_udf("wmean", WeightedMean())
    spec = regs.for_topology("t").functions.lookup("wmean")
    assert spec.aggregate and spec.agg_params == (0, 1)
    out = run_query("SELECT ISTREAM k, wmean(v, w) AS m FROM s [RANGE 3 TUPLES] GROUP BY k",
                    {"s": [{"k": "a", "v": 1, "w": 1}, {"k": "a", "v": 4, "w": 2}]}, context=context(regs))
    assert out[-1] == {"k": "a", "m": 3.0}


def test_generic_udaf_with_one_aggregation_parameter():
    regs = PluginRegistries()
    regs.add_udaf("joined", lambda values, sep: sep.join(str(v) for v in values), agg_params=(0,))
    out = run_query('SELECT RSTREAM joined(x, "+") AS j FROM s [RANGE 2 TUPLES]',
                    {"s": [{"x": 1}, {"x": 2}, {"x": 3}]}, context=context(regs))
    assert out == [{"j": "1"}, {"j": "1+2"}, {"j": "2+3"}]
    with pytest.raises(TypeError, match="aggregation parameter 2 does not exist"):
        regs.add_udaf("bad", lambda a, b: a, agg_params=(2,))


# ---------------------------------------------------------------- UDSFs


class Pairs(Udsf):
    def __init__(self, left: str, right: str):
        self.input(left, "left")
        self.input(right, "right")

    def process(self, tup):
        return [{"side": tup.input, **tup.data}]


def test_udsf_named_inputs_and_conversions():
    regs = PluginRegistries()
    regs.add_udsf("pairs", Pairs)
    out = run_query('SELECT RSTREAM * FROM pairs("a", "b") [RANGE 1 TUPLES]',
                    {"a": [{"x": 1}], "b": [{"x": 2}]}, context=context(regs))
    assert out == [{"side": "left", "x": 1}, {"side": "right", "x": 2}]


def test_udsf_arity_error_is_a_statement_error():
    regs = PluginRegistries()
    regs.add_udsf("pairs", Pairs)
    with pytest.raises(BQLExecutionError, match="UDSF 'pairs' takes 2 arguments, got 1"):
        run_query('SELECT RSTREAM * FROM pairs("a") [RANGE 1 TUPLES]', {"a": []}, context=context(regs))


def test_source_like_udsf_generate_and_pickle():
    import pickle

    from sbpy.plugins.examples.udsfs import Ticker

    regs = PluginRegistries()
    regs.add_udsf("ticker", Ticker)
    u = regs.for_topology("t").udsfs.lookup("ticker")("1s")
    t0 = _dt.datetime(2024, 1, 1, tzinfo=_dt.timezone.utc)
    assert [t.data for t in u.generate(t0)] == [{"tick": 0}]
    assert u.generate(t0 + _dt.timedelta(milliseconds=500)) == []
    u2 = pickle.loads(pickle.dumps(u))
    assert [t.data for t in u2.generate(t0 + _dt.timedelta(seconds=2))] == [{"tick": 1}, {"tick": 2}]


# ---------------------------------------------------------------- sources and sinks


class FakeCtx:
    def __init__(self, skip=0, rewinds=0):
        self.out, self.skip, self.rewinds = [], skip, rewinds

    def emit(self, data, ts=None):
        self.out.append(data)

    def sleep(self, s):
        return True

    def rewind_requested(self):
        return False

    def wait_for_rewind(self):
        if self.rewinds:
            self.rewinds -= 1
            return True
        return False


class Three(SourceType):
    def tuples(self):
        return [{"n": i} for i in range(3)]


def test_source_type_run_skip_and_rewind():
    ctx = FakeCtx(skip=1)
    Three({}).run(ctx)
    assert ctx.out == [{"n": 1}, {"n": 2}]
    ctx = FakeCtx(rewinds=1)
    Three({"rewindable": True}).run(ctx)
    assert ctx.out == [{"n": i} for i in (0, 1, 2, 0, 1, 2)]
    with pytest.raises(ValueError):
        Three({"interval": "soon"})


def test_sink_type_skips_replayed_batches():
    class Keep(SinkType):
        def __init__(self, params, recovering=False):
            super().__init__(params, recovering)
            self.rows = []

        def write_tuple(self, data):
            self.rows.append(data)

    s = Keep({})
    s.write([{"a": 1}], ("q", 0))
    s.write([{"a": 1}], ("q", 0))
    s.write([{"a": 2}], ("q", 1))
    s.write([{"a": 3}], None)
    assert s.rows == [{"a": 1}, {"a": 2}, {"a": 3}]


# ---------------------------------------------------------------- a plugin call compiles like a builtin's


def test_plugin_udf_compiles_to_the_same_call_as_a_builtin():
    """Same compiled call, same answer (its cost next to a builtin's is bench/b_udf.py's figure: no time
    is asserted in a test)."""
    from sbpy.bql.eval.compiler import _call
    from sbpy.bql.functions.signatures import integer

    def builtin_inc(v):
        return integer("inc", "v", v) + 1

    def inc(v: int) -> int:
        return v + 1

    def field(env):
        return env

    builtin = _call(FunctionSpec("inc", builtin_inc, 1, 1, null_on_null=True), [field])
    plugin = _call(plugins(inc=inc).for_topology("t").functions.lookup("inc"), [field])
    assert plugin(3) == builtin(3) == 4
    assert plugin(None) is None and builtin(None) is None  # both null on null
