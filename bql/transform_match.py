"""Parse tree → AST for MATCH_RECOGNIZE: the clause, its row pattern algebra, and the rewrite of
navigation calls (PREV/NEXT/FIRST/LAST, CLASSIFIER, MATCH_NUMBER) inside its expressions; Flink's
``WITHIN INTERVAL 'n' unit``, the SETTINGS clause and ``A.*`` (docs/match-recognize.md).
"""
from __future__ import annotations

from lark import Token

from .ast import (
    SUBQUERY_ALIAS,
    AfterMatchSkip,
    Classifier,
    FieldRef,
    FunctionCall,
    Interval,
    KeyStep,
    Literal,
    MatchNumber,
    MatchRecognize,
    MatchSetting,
    MatchTime,
    Measure,
    Projection,
    Select,
    Navigation,
    PatternAlt,
    PatternAnchor,
    PatternConcat,
    PatternEmpty,
    PatternExclusion,
    PatternPermute,
    PatternQuantified,
    PatternVar,
    StreamRef,
    SubqueryRef,
    SubsetDef,
    VariableDef,
    Wildcard,
)
from .transform_base import fail, ident, rewrite, span_of, unique_settings
from .transform_expr import int_value
from .transform_select import WINDOW_FUNCTIONS

NAVIGATIONS = frozenset({"prev", "next", "first", "last"})
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def _var(tok) -> str:
    return str(tok).upper()


def navigation_rewrite(node):
    """The MATCH_RECOGNIZE form of a call node, or None to keep it (used with ``rewrite``)."""
    if not isinstance(node, FunctionCall) or node.order_by:
        return None
    name, args = node.name, node.args
    if name in NAVIGATIONS and len(args) in (1, 2):
        offset = None
        if len(args) == 2:
            off = args[1]
            if not (isinstance(off, Literal) and type(off.value) is int and off.value >= 0):
                raise fail(f"the offset of '{name.upper()}' must be a non-negative integer constant",
                           off)
            offset = off.value
        return Navigation(name, args[0], offset, span=node.span)
    if name == "classifier" and len(args) <= 1:
        var = None
        if args:
            a = args[0]
            if not (isinstance(a, FieldRef) and a.stream is None and len(a.path) == 1
                    and isinstance(a.path[0], KeyStep) and not a.path[0].bracket):
                raise fail("the argument of 'CLASSIFIER' must be a pattern variable", a)
            var = a.path[0].key.upper()
        return Classifier(var, span=node.span)
    if name == "match_number" and not args:
        return MatchNumber(span=node.span)
    if name in ("match_rowtime", "match_proctime") and not args:
        return MatchTime("row" if name == "match_rowtime" else "proc", span=node.span)
    return None


class MatchRules:
    """Transformer rules for section 5 of the grammar (mixed into ``BQLTransformer``)."""

    def match_recognize(self, meta, name, *rest):
        items = list(rest)
        window = None
        alias = None
        if items and isinstance(items[-1], tuple) and items[-1][0] == "alias":
            alias = items.pop()[1]
        body = items.pop()
        if items:
            window = items.pop()
        name_span = span_of(name)
        if window is not None and window.span is not None and name_span is not None:
            name_span = type(name_span)(name_span.start, window.span.end, name_span.line,
                                        name_span.column)
        source = StreamRef(ident(name), window, None, span=name_span)
        return MatchRecognize(source, alias=alias, span=span_of(meta), **body)

    def match_recognize_subquery(self, meta, select, body, alias=None):
        """``(select) MATCH_RECOGNIZE (...) [[AS] alias]``: the pattern runs over the subquery's output
        stream, an input named like the subquery of ``(select) AS alias`` (docs/match-recognize.md)."""
        alias = alias[1] if alias is not None else None
        source = SubqueryRef(select, None, alias or SUBQUERY_ALIAS, span=span_of(meta))
        return MatchRecognize(source, alias=alias, span=span_of(meta), **body)

    def match_recognize_call(self, meta, name, *rest):
        """``tumble|hop|session(...) MATCH_RECOGNIZE (...) [[AS] alias]``: the pattern runs over the window
        function's rows (each input row with its ``window_start``/``window_end``), exactly as over
        ``(SELECT * FROM tumble(...)) MATCH_RECOGNIZE (...)``, which is what this builds."""
        parts = list(rest)
        alias = parts.pop() if parts and isinstance(parts[-1], tuple) else None
        body = parts.pop()
        if ident(name) not in WINDOW_FUNCTIONS:
            raise fail("MATCH_RECOGNIZE reads a stream, a subquery or a window function (tumble, hop, "
                       f"session), not '{ident(name)}(...)'", name)
        window = self.from_call(meta, name, *parts)
        span = span_of(meta)
        select = Select(None, (Projection(Wildcard(span=span), span=span),), (window,), span=span)
        return self.match_recognize_subquery(meta, select, body, alias)

    def bare_alias(self, meta, tok):
        return ("alias", ident(tok))

    def mr_body(self, meta, *parts):
        body = {
            "partition_by": (), "order_by": (), "measures": (), "rows_per_match": "one",
            "empty_matches": None, "after_match": AfterMatchSkip(), "within": None,
            "subsets": (), "defines": (), "settings": (),
        }
        for key, value in parts:
            if key == "rows":
                body["rows_per_match"], body["empty_matches"] = value
            else:
                body[key] = value
        for key in ("partition_by", "order_by", "measures", "defines"):
            body[key] = rewrite(body[key], navigation_rewrite)
        return body

    def mr_partition(self, meta, *exprs):
        return ("partition_by", tuple(exprs))

    def mr_order(self, meta, *keys):
        return ("order_by", tuple(keys))

    def mr_measures(self, meta, *measures):
        return ("measures", tuple(measures))

    def measure(self, meta, expr, name):
        return Measure(expr, str(name), span=span_of(meta))

    def rows_one(self, meta):
        return ("rows", ("one", None))

    def rows_all(self, meta, empty=None):
        return ("rows", ("all", empty))

    def empty_matches(self, meta, *toks):
        return {"show": "show", "omit": "omit", "with": "with_unmatched"}[str(toks[0]).lower()]

    def mr_after(self, meta, skip):
        return ("after_match", skip)

    def skip_past_last_row(self, meta):
        return AfterMatchSkip("past_last_row", span=span_of(meta))

    def skip_to_next_row(self, meta):
        return AfterMatchSkip("to_next_row", span=span_of(meta))

    def skip_to_first(self, meta, var):
        return AfterMatchSkip("to_first", _var(var), span=span_of(meta))

    def skip_to_last(self, meta, var):
        return AfterMatchSkip("to_last", _var(var), span=span_of(meta))

    def skip_to_var(self, meta, var):
        return AfterMatchSkip("to", _var(var), span=span_of(meta))

    def mr_pattern(self, meta, pattern):
        return ("pattern", pattern)

    def mr_within(self, meta, interval):
        return ("within", interval)

    def mr_within_sql(self, meta, text, unit):
        """Flink's ``WITHIN INTERVAL '10' SECOND`` (also MILLISECOND, MINUTE, HOUR, DAY): stored as
        ``n SECONDS`` / ``n MILLISECONDS`` like BQL's own ``WITHIN 10 SECONDS``."""
        digits = str(text)[1:-1]
        value = float(digits) if "." in digits else int(digits)
        if unit == "millisecond":
            return ("within", Interval(value, "milliseconds", span=span_of(meta)))
        seconds = value * _UNIT_SECONDS[unit]
        if type(seconds) is float and seconds.is_integer() and type(value) is int:
            seconds = int(seconds)
        return ("within", Interval(seconds, "seconds", span=span_of(meta)))

    def sql_time_unit(self, meta, tok):
        return str(tok).lower()

    def mr_settings(self, meta, *settings):
        return ("settings", unique_settings(settings, "MATCH_RECOGNIZE setting"))

    def mr_setting(self, meta, name, value):
        if isinstance(value, Token):
            if value.type == "STRING":
                value = str(value)[1:-1].replace('""', '"')
            else:
                value = int_value(value) if value.type == "INT" else float(str(value))
        return MatchSetting(str(name).lower(), value, span=span_of(meta))

    def var_wildcard(self, meta, tok):
        """``A.*``: every row mapped to ``A`` (the argument of ``count`` in MATCH_RECOGNIZE); kept as
        the stream wildcard ``a:*`` of the same name."""
        return Wildcard(ident(str(tok)[:-2]), span=span_of(meta))

    def mr_subsets(self, meta, *defs):
        return ("subsets", tuple(defs))

    def subset_def(self, meta, name, *variables):
        return SubsetDef(_var(name), tuple(_var(v) for v in variables), span=span_of(meta))

    def mr_defines(self, meta, *defs):
        return ("defines", tuple(defs))

    def var_def(self, meta, name, cond):
        return VariableDef(_var(name), cond, span=span_of(meta))

    # ------------------------------------------------------------------ row patterns

    def pattern_alt(self, meta, left, right):
        items = left.items if isinstance(left, PatternAlt) else (left,)
        right_items = right.items if isinstance(right, PatternAlt) else (right,)
        return PatternAlt((*items, *right_items), span=span_of(meta))

    def pattern_concat(self, meta, left, right):
        # Concatenation and alternation are associative: groups are flattened.
        items = left.items if isinstance(left, PatternConcat) else (left,)
        right_items = right.items if isinstance(right, PatternConcat) else (right,)
        return PatternConcat((*items, *right_items), span=span_of(meta))

    def pattern_quantified(self, meta, term, quant):
        (low, high), reluctant = quant
        return PatternQuantified(term, low, high, reluctant, span=span_of(meta))

    def pattern_var(self, meta, tok):
        return PatternVar(_var(tok), span=span_of(meta))

    def pattern_empty(self, meta):
        return PatternEmpty(span=span_of(meta))

    def pattern_permute(self, meta, *items):
        return PatternPermute(tuple(items), span=span_of(meta))

    def pattern_exclusion(self, meta, term):
        return PatternExclusion(term, span=span_of(meta))

    def anchor_start(self, meta):
        return PatternAnchor("start", span=span_of(meta))

    def anchor_end(self, meta):
        return PatternAnchor("end", span=span_of(meta))

    def quantifier(self, meta, bounds, reluctant):
        return bounds, reluctant

    def reluctant(self, meta, *toks):
        return bool(toks)

    def q_star(self, meta):
        return (0, None)

    def q_plus(self, meta):
        return (1, None)

    def q_opt(self, meta):
        return (0, 1)

    def q_exact(self, meta, n):
        return (int_value(n), int_value(n))

    def q_min(self, meta, n):
        return (int_value(n), None)

    def q_max(self, meta, m):
        return (0, int_value(m))

    def q_range(self, meta, n, m):
        low, high = int_value(n), int_value(m)
        if low > high:
            raise fail(f"quantifier minimum {low} is greater than its maximum {high}", meta)
        return (low, high)
