"""sbpy.bql: the BQL language — grammar, AST, analyzer, values, evaluator, kernels, Spark compilation.

Entry points (see docs/architecture.md for the contracts)::

    from sbpy.bql.parser import parse, parse_script
    from sbpy.bql.analyzer import analyze
    from sbpy.bql.eval import evaluate_constant
"""
