"""AST → canonical BQL text for every node: upper-case keywords, minimal parentheses by
precedence, strings re-escaped, defaults (ONE ROW PER MATCH, AFTER MATCH SKIP PAST LAST ROW, WAIT
IF FULL when not written) left out. For every statement ``s`` the parser produces,
``parse_one(unparse(s)) == s``.

Statements, SELECT parts and MATCH_RECOGNIZE are here; expressions and row patterns are in
``unparse_expr``. Dispatch is by node class name; an unmapped node fails with ``TypeError``.
"""
from __future__ import annotations

from decimal import Decimal

from .base import Node
from .expressions import Literal
from .patterns import Interval
from .statements import SUBQUERY_ALIAS, SubqueryRef
from .unparse_expr import AND, EXPR_RULES, expr, path_text, pattern, quote

__all__ = ["unparse", "quote", "RULES"]


def unparse(node: Node) -> str:
    """Canonical BQL text of a statement, expression, or any other AST node."""
    fn = RULES.get(type(node).__name__)
    if fn is None:
        raise TypeError(f"cannot unparse '{type(node).__name__}'")
    return fn(node)


def _number(v) -> str:
    return unparse(Literal(v))


def _params(keyword: str, params) -> str:
    if not params:
        return ""
    return f" {keyword} " + ", ".join(_Param(p) for p in params)


def _Param(p) -> str:
    # values are read without a top-level OR (see grammar section 2)
    return f"{p.name} = {expr(p.value, AND)}"


# ---------------------------------------------------------------------------- DDL and control


def _CreateSource(s) -> str:
    paused = "PAUSED " if s.paused else ""
    return f"CREATE {paused}SOURCE {s.name} TYPE {s.type_name}" + _params("WITH", s.params)


def _CreateSink(s) -> str:
    return f"CREATE SINK {s.name} TYPE {s.type_name}" + _params("WITH", s.params)


def _CreateState(s) -> str:
    return f"CREATE STATE {s.name} TYPE {s.type_name}" + _params("WITH", s.params)


def _CreateStreamAsSelect(s) -> str:
    return f"CREATE STREAM {s.name} AS {unparse(s.select)}"


def _UpdateNode(s) -> str:
    return f"UPDATE {s.kind.upper()} {s.name}" + _params("SET", s.params)


def _DropNode(s) -> str:
    return f"DROP {s.kind.upper()} {s.name}"


def _InsertInto(s) -> str:
    return f"INSERT INTO {s.sink} FROM {s.stream}"


def _SourceControl(s) -> str:
    return f"{s.action.upper()} SOURCE {s.name}"


def _SaveState(s) -> str:
    return f"SAVE STATE {s.name}" + (f" TAG {s.tag}" if s.tag else "")


def _LoadState(s) -> str:
    out = f"LOAD STATE {s.name} TYPE {s.type_name}"
    if s.tag:
        out += f" TAG {s.tag}"
    out += _params("SET", s.set_params)
    if s.create_if_not_saved:
        out += " OR CREATE IF NOT SAVED" + _params("WITH", s.create_params)
    return out


def _Explain(s) -> str:
    return f"EXPLAIN {unparse(s.statement)}"


def _Eval(s) -> str:
    return f"EVAL {expr(s.expr)}" + (f" ON {expr(s.on)}" if s.on is not None else "")


# ---------------------------------------------------------------------------- SELECT


def _SelectUnion(s) -> str:
    return " UNION ALL ".join(unparse(x) for x in s.selects)


def _Select(s) -> str:
    out = ["SELECT"]
    if s.emitter:
        out.append(s.emitter.upper())
    if s.emitter_options:
        out.append("[" + " ".join(_EmitterOption(o) for o in s.emitter_options) + "]")
    if s.distinct:
        out.append("DISTINCT")
    out.append(", ".join(_Projection(p) for p in s.projections))
    if s.left_join_on is not None:
        left, right = s.from_items
        out.append(f"FROM {unparse(left)} LEFT JOIN {unparse(right)} ON {expr(s.left_join_on)}")
    else:
        out.append("FROM " + ", ".join(unparse(f) for f in s.from_items))
    if s.where is not None:
        out.append(f"WHERE {expr(s.where)}")
    if s.group_by:
        out.append("GROUP BY " + ", ".join(expr(g) for g in s.group_by))
    if s.having is not None:
        out.append(f"HAVING {expr(s.having)}")
    if s.partition_by:
        out.append("PARTITION BY " + ", ".join(expr(e) for e in s.partition_by))
    if s.order_by:
        out.append("ORDER BY " + ", ".join(_SortKey(k) for k in s.order_by))
    if s.limit is not None:
        out.append(f"LIMIT {s.limit}" + (f" OFFSET {s.offset}" if s.offset is not None else ""))
    if s.emit is not None:
        out.append(_EmitClause(s.emit))
    if s.settings:
        out.append("SETTINGS " + ", ".join(_MatchSetting(x) for x in s.settings))
    return " ".join(out)


def _EmitterOption(o) -> str:
    """SensorBee's spelling (ast.go ``EmitterAST.string``), the numbers as written."""
    if o.kind == "limit":
        return f"LIMIT {o.value}"
    if o.kind == "every_tuple":
        return f"EVERY {o.value}-{o.suffix} TUPLE"
    if o.kind == "every_time":
        return f"EVERY {_plain_number(o.value)} {o.unit.upper()}"
    return f"SAMPLE {_plain_number(o.value)}%"


def _plain_number(value: int | float) -> str:
    """An int as digits, a float in positional notation with a '.' (the grammar has no exponents)."""
    if isinstance(value, int):
        return str(value)
    text = format(Decimal(repr(value)), "f")
    return text if "." in text else text + ".0"


def _Projection(p) -> str:
    text = expr(p.expr)
    return text if p.alias is None else f"{text} AS {_AliasPath(p.alias)}"


def _AliasPath(a) -> str:
    return "*" if a.star else path_text(a.steps)


def _HistoryTable(f) -> str:
    return f"table({f.stream})" + _alias(f.alias)


def _SubqueryRef(f) -> str:
    if f.alias == SUBQUERY_ALIAS:  # written without an alias (a Timeplus query's FROM (SELECT ...))
        return f"({unparse(f.select)}){_window(f.window)}"
    return f"({unparse(f.select)}){_window(f.window)} AS {f.alias}"


def _alias(alias) -> str:
    return f" AS {alias}" if alias is not None else ""


def _window(w) -> str:
    return f" {_RangeWindow(w)}" if w is not None else ""


def _RangeWindow(w) -> str:
    out = f"[RANGE {_number(w.value)} {w.unit.upper()}"
    if w.buffer_size is not None:
        out += f", BUFFER SIZE {w.buffer_size}"
    if w.drop_mode is not None:
        out += ", " + {"wait": "WAIT IF FULL", "drop_oldest": "DROP OLDEST IF FULL",
                       "drop_newest": "DROP NEWEST IF FULL"}[w.drop_mode]
    return out + "]"


def _StreamRef(f) -> str:
    return f.name + _window(f.window) + _alias(f.alias)


def _UdsfCall(f) -> str:
    args = ", ".join(expr(a) for a in f.args)
    return f"{f.name}({args})" + _window(f.window) + _alias(f.alias)


def _WindowFunction(f) -> str:
    args = [f"({unparse(f.source.select)})" if f.source is not None else f.stream]
    if f.time_expr is not None:
        args.append(expr(f.time_expr))
    args += [_Interval(i) for i in f.intervals]
    if f.time_zone is not None:
        args.append(quote(f.time_zone))
    return f"{f.kind}({', '.join(args)})" + _alias(f.alias)


def _Interval(i) -> str:
    if i.shorthand is not None:
        return i.shorthand
    return f"{_number(i.value)} {i.unit.upper()}"


def _EmitClause(e) -> str:
    extras = []
    if e.timeout is not None:
        extras.append(f"TIMEOUT {_Interval(e.timeout)}")
    if e.last is not None:
        extras.append(f"LAST {_Interval(e.last)}" + (" ON PROCTIME" if e.last_proctime else ""))
    if e.implicit:
        return "EMIT " + " AND ".join(extras)
    if e.kind == "periodic":
        out = f"EMIT PERIODIC {_Interval(e.period)}" + (" REPEAT" if e.repeat else "")
        out += " ON UPDATE" if e.on_update else ""
    elif e.kind == "on_update":
        out = "EMIT ON UPDATE"
    elif e.spelled_window_close:
        out = "EMIT AFTER WINDOW CLOSE"
    else:
        out = "EMIT AFTER WATERMARK"
    out += f" WITH DELAY {_Interval(e.delay)}" if e.delay is not None else ""
    return "".join([out, *(f" AND {x}" for x in extras)])


# ---------------------------------------------------------------------------- MATCH_RECOGNIZE


def _MatchRecognize(m) -> str:
    parts = []
    if m.partition_by:
        parts.append("PARTITION BY " + ", ".join(expr(e) for e in m.partition_by))
    if m.order_by:
        parts.append("ORDER BY " + ", ".join(_SortKey(k) for k in m.order_by))
    if m.measures:
        parts.append("MEASURES " + ", ".join(_Measure(x) for x in m.measures))
    if m.rows_per_match == "all":
        empty = {None: "", "show": " SHOW EMPTY MATCHES", "omit": " OMIT EMPTY MATCHES",
                 "with_unmatched": " WITH UNMATCHED ROWS"}[m.empty_matches]
        parts.append("ALL ROWS PER MATCH" + empty)
    if m.after_match.mode != "past_last_row":
        parts.append(_AfterMatchSkip(m.after_match))
    parts.append(f"PATTERN ({pattern(m.pattern)})")
    if m.within is not None:
        parts.append(f"WITHIN {_Interval(m.within)}")
    if m.subsets:
        parts.append("SUBSET " + ", ".join(_SubsetDef(s) for s in m.subsets))
    parts.append("DEFINE " + ", ".join(_VariableDef(d) for d in m.defines))
    if m.settings:
        parts.append("SETTINGS " + ", ".join(_MatchSetting(x) for x in m.settings))
    if isinstance(m.input, SubqueryRef):  # (select) MATCH_RECOGNIZE (...)
        source = f"({unparse(m.input.select)})"
    else:
        source = m.input.name + _window(m.input.window)
    return f"{source} MATCH_RECOGNIZE ({' '.join(parts)})" + _alias(m.alias)


def _MatchSetting(x) -> str:
    v = x.value
    if isinstance(v, Interval):
        text = _Interval(v)
    elif isinstance(v, str):
        text = '"' + v.replace('"', '""') + '"'
    else:
        text = _number(v)
    return f"{x.name} = {text}"


def _SortKey(k) -> str:
    return expr(k.expr) + (" DESC" if k.descending else "")


def _Measure(x) -> str:
    return f"{expr(x.expr)} AS {x.alias}"


def _AfterMatchSkip(a) -> str:
    tail = {"past_last_row": "PAST LAST ROW", "to_next_row": "TO NEXT ROW",
            "to_first": f"TO FIRST {a.var}", "to_last": f"TO LAST {a.var}",
            "to": f"TO {a.var}"}[a.mode]
    return f"AFTER MATCH SKIP {tail}"


def _SubsetDef(s) -> str:
    return f"{s.name} = ({', '.join(s.variables)})"


def _VariableDef(d) -> str:
    return f"{d.name} AS {expr(d.condition)}"


RULES = dict(EXPR_RULES)
RULES.update({name[1:]: fn for name, fn in list(globals().items())
              if name.startswith("_") and name[1:2].isupper() and callable(fn)})
