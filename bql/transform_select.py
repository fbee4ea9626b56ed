"""Parse tree → AST for SELECT: projections and labels, FROM items (streams, UDSF calls, Timeplus
window functions), RANGE windows, WHERE / GROUP BY / HAVING, LIMIT and the Timeplus EMIT clause.
"""
from __future__ import annotations

from lark import Token

from .ast import (
    AliasPath, EmitClause, EmitterOption, Expr, FieldRef, Interval, KeyStep, Projection, RangeWindow,
    HistoryTable, Select, SelectUnion, StreamRef, UdsfCall, WindowFunction, SUBQUERY_ALIAS, SubqueryRef,
)
from .transform_base import fail, ident, present, span_of, unique_settings
from .transform_interval import shorthand_interval, time_zone_name
from .transform_expr import int_value
from .transform_join import flatten_joins

WINDOW_FUNCTIONS = frozenset({"tumble", "hop", "session"})
_DISTINCT = object()  # what the ``distinct`` rule returns: a marker, not a string like the emitter


class _Tail:
    """The clauses after FROM, collected by ``select_tail``."""

    __slots__ = ("where", "group_by", "having", "order_by", "limit", "offset", "emit", "partition_by",
                 "settings")

    def __init__(self):
        self.where = None
        self.group_by = ()
        self.having = None
        self.order_by = ()
        self.limit = None
        self.offset = None
        self.emit = None
        self.partition_by = ()
        self.settings = ()


class SelectRules:
    """Transformer rules for sections 3, 4 and 6 of the grammar (mixed into ``BQLTransformer``)."""

    # ------------------------------------------------------------------ SELECT

    def select_union(self, meta, *selects):
        return SelectUnion(tuple(selects), span=span_of(meta))

    def select(self, meta, *children):
        items = list(children)
        emitter, emitter_options = items.pop(0) if isinstance(items[0], tuple) else (None, ())
        distinct = items[0] is _DISTINCT
        if distinct:
            items.pop(0)
        tail = items.pop()
        projections = tuple(c for c in items if isinstance(c, Projection))
        from_items, where, left_on = flatten_joins([c for c in items if not isinstance(c, Projection)],
                                                   tail.where, tail.emit)
        return Select(emitter, projections, from_items, where, tail.group_by, tail.having,
                      tail.limit, tail.emit, distinct, tail.order_by, tail.offset, left_on,
                      partition_by=tail.partition_by, settings=tail.settings,
                      emitter_options=emitter_options, span=span_of(meta))

    def emitter(self, meta, tok, options=()):
        return str(tok).lower(), options

    # SensorBee's emitter options: ``[LIMIT n]``, ``[EVERY k-TH TUPLE]``, ``[EVERY x SECONDS]``, ``[SAMPLE x%]``

    def emitter_options(self, meta, _open, *options):
        return tuple(options)

    def emitter_limit(self, meta, n):
        if not isinstance(n, int):
            raise fail("LIMIT takes an integer", meta)
        return EmitterOption("limit", n, span=span_of(meta))

    def every_tuple(self, meta, k, suffix):
        if not isinstance(k, int):
            raise fail("EVERY k-TH TUPLE takes an integer", meta)
        return EmitterOption("every_tuple", k, suffix=suffix, span=span_of(meta))

    def every_time(self, meta, value, unit):
        return EmitterOption("every_time", value, unit=str(unit).lower(), span=span_of(meta))

    def sample(self, meta, value):
        return EmitterOption("sample", value, span=span_of(meta))

    def emit_number(self, meta, *toks):
        """SensorBee's NumericLiteral / FloatLiteral: ``-``? digits [``.`` digits]."""
        tok = toks[-1]
        if tok.type == "FLOAT":
            value = float(str(tok))
            if value == float("inf"):  # ast.go NewFloatLiteral: ParseFloat's range error panics
                raise fail(f"float literal {tok} is out of the range of float64", tok)
        else:
            value = int_value(tok)  # ast.go NewNumericLiteral: beyond int64 panics
        return -value if len(toks) == 2 else value

    def ordinal_suffix(self, meta, tok):
        return str(tok).upper()

    def distinct(self, meta, tok):
        return _DISTINCT

    def select_order(self, meta, *keys):
        return ("order_by", tuple(keys))

    def select_tail(self, meta, *clauses):
        tail = _Tail()
        for name, value in clauses:
            if name == "limit":
                tail.limit, tail.offset = value
            else:
                setattr(tail, name, value)
        return tail

    def where(self, meta, expr):
        return ("where", expr)

    def group_by(self, meta, *exprs):
        return ("group_by", tuple(exprs))

    def having(self, meta, expr):
        return ("having", expr)

    def partition_by(self, meta, *exprs):
        return ("partition_by", tuple(exprs))

    def select_settings(self, meta, *settings):
        return ("settings", unique_settings(settings, "setting"))

    def limit(self, meta, tok, offset=None):
        return ("limit", (int_value(tok), None if offset is None else int_value(offset)))

    def projection(self, meta, expr, alias=None):
        return Projection(expr, alias, span=span_of(meta))

    def alias_path(self, meta, head, *steps):
        return AliasPath((head, *steps), span=span_of(meta))

    def alias_star(self, meta):
        return AliasPath((), True, span=span_of(meta))

    # ------------------------------------------------------------------ FROM

    def alias(self, meta, tok):
        return ("alias", ident(tok))

    def stream_ref(self, meta, name, *opts):
        window, alias = self._window_alias(opts)
        return StreamRef(ident(name), window, alias, span=span_of(meta))

    def from_call(self, meta, name, *rest):
        items = list(rest)
        tail = []
        while items and isinstance(items[-1], (RangeWindow, tuple)):
            tail.insert(0, items.pop())
        window, alias = self._window_alias(tail)
        args = present(items)
        fname = ident(name)
        if fname in WINDOW_FUNCTIONS:
            if window is not None:
                raise fail(f"window function '{fname}' cannot have a RANGE window", window)
            return self._window_function(meta, fname, name, args, alias)
        _no_subquery(args if fname != "table" else args[1:])
        if fname == "table":
            return self._history_table(meta, name, args, window, alias)
        for a in args:
            if isinstance(a, Interval):
                raise fail(f"an interval is not a valid argument of '{fname}'", a)
        return UdsfCall(fname, tuple(args), window, alias, span=span_of(meta))

    def _history_table(self, meta, name_tok, args, window, alias) -> HistoryTable:
        """``table(stream) [AS alias]``: one stream name, no RANGE window (a bounded relation)."""
        if len(args) != 1 or not _is_plain_name(args[0]):
            at = args[1] if len(args) > 1 else args[0] if args else name_tok
            raise fail("'table' takes one argument, a stream name: table(stream)", at)
        if window is not None:
            raise fail("table() is a bounded relation and cannot have a RANGE window", window)
        return HistoryTable(args[0].path[0].key.lower(), alias, span=span_of(meta))

    def subquery_arg(self, meta, select):
        return SubqueryRef(select, None, SUBQUERY_ALIAS, span=span_of(meta))

    def _window_function(self, meta, kind, name_tok, args, alias) -> WindowFunction:
        source = args[0] if args and isinstance(args[0], SubqueryRef) else None
        if source is None and (not args or not _is_plain_name(args[0])):
            at = args[0] if args else name_tok
            raise fail(f"the first argument of '{kind}' must be a stream name", at)
        _no_subquery(args[1:])
        stream = source.alias if source is not None else args[0].path[0].key.lower()
        rest = args[1:]
        time_expr = None
        if rest and isinstance(rest[0], Expr):
            time_expr = rest.pop(0)
        zone = None
        if rest and not isinstance(rest[-1], Interval) and any(isinstance(a, Interval) for a in rest):
            zone = time_zone_name(kind, rest.pop())
        for a in rest:
            if not isinstance(a, Interval):
                raise fail(f"'{kind}' expects an interval such as '5 SECONDS' here", a)
        if not rest:
            raise fail(f"'{kind}' needs a window size interval such as '5 SECONDS'", meta)
        return WindowFunction(kind, stream, time_expr, tuple(rest), alias, zone, source, span=span_of(meta))

    @staticmethod
    def _window_alias(opts):
        window = next((o for o in opts if isinstance(o, RangeWindow)), None)
        alias = next((o[1] for o in opts if isinstance(o, tuple) and o[0] == "alias"), None)
        return window, alias

    def range_window(self, meta, value, unit, *opts):
        buffer_size = next((o[1] for o in opts if o[0] == "buffer"), None)
        drop = next((o[1] for o in opts if o[0] == "drop"), None)
        return RangeWindow(_number(value), unit, buffer_size, drop, span=span_of(meta))

    def range_unit(self, meta, tok):
        return str(tok).lower()

    time_unit = range_unit

    def buffer_size(self, meta, tok):
        return ("buffer", int_value(tok))

    def wait_if_full(self, meta):
        return ("drop", "wait")

    def drop_oldest(self, meta):
        return ("drop", "drop_oldest")

    def drop_newest(self, meta):
        return ("drop", "drop_newest")

    def interval(self, meta, value, unit):
        return Interval(_number(value), unit, span=span_of(meta))

    def interval_short(self, meta, tok):
        return shorthand_interval(tok)

    # ------------------------------------------------------------------ EMIT

    def delay(self, meta, interval):
        return interval

    def repeat(self, meta, *toks):
        return bool(toks)

    def emit_stream(self, meta, *toks):
        return None  # EMIT STREAM ...: Timeplus' optional word, no meaning of its own

    def proctime(self, meta, *toks):
        return bool(toks)

    def emit_timeout(self, meta, interval):
        return ("timeout", interval, False)

    def emit_last(self, meta, interval, proctime):
        return ("last", interval, proctime)

    def emit_after_watermark(self, meta, *rest):
        return ("emit", _emit_clause(meta, "after_watermark", rest))

    def emit_after_window_close(self, meta, *rest):
        return ("emit", _emit_clause(meta, "after_watermark", rest, spelled_window_close=True))

    def emit_on_update(self, meta, *rest):
        return ("emit", _emit_clause(meta, "on_update", rest))

    def periodic_on_update(self, meta, *toks):
        return bool(toks)

    def emit_periodic(self, meta, _stream, period, repeat, on_update, *extras):
        return ("emit", _emit_clause(meta, "periodic", extras, period=period, repeat=repeat,
                                     on_update=on_update))

    def emit_extras_only(self, meta, *rest):
        return ("emit", _emit_clause(meta, "after_watermark", rest, implicit=True))


def _emit_clause(meta, kind: str, rest, **kw) -> EmitClause:
    """An EmitClause from the children after EMIT: an optional delay, then ``AND TIMEOUT`` / ``AND LAST``."""
    delay = next((r for r in rest if isinstance(r, Interval)), None)
    extras = {}
    for r in rest:
        if isinstance(r, tuple):
            if r[0] in extras:
                raise fail(f"EMIT has {r[0].upper()} twice", r[1])
            extras[r[0]] = r
    last = extras.get("last")
    timeout = extras.get("timeout")
    return EmitClause(kind, delay, timeout=timeout[1] if timeout else None, last=last[1] if last else None,
                      last_proctime=bool(last and last[2]), span=span_of(meta), **kw)


def _number(tok: Token) -> int | float:
    return int_value(tok) if tok.type == "INT" else float(str(tok))


def _is_plain_name(expr) -> bool:
    return (isinstance(expr, FieldRef) and expr.stream is None and len(expr.path) == 1
            and isinstance(expr.path[0], KeyStep) and not expr.path[0].bracket)


def _no_subquery(args) -> None:
    """Only the stream argument of tumble/hop/session may be a ``(select)``."""
    for a in args:
        if isinstance(a, SubqueryRef):
            raise fail("a subquery can only be the stream (first) argument of tumble, hop or session", a)
