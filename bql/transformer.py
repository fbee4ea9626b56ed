"""The lark Transformer that turns a BQL parse tree into AST nodes (``bql/ast``), a span on each.

Rules are grouped by grammar section in mixins: expressions (``transform_expr``), SELECT
(``transform_select``), JOIN chains (``transform_join``), subqueries and CTEs (``transform_cte``),
MATCH_RECOGNIZE (``transform_match``); the DDL and control statements are here. Beyond building
nodes it only makes the static checks SensorBee's parser makes (literal ranges, type names,
statically invalid JSON paths) and raises ``StaticSyntaxError`` for them.
"""
from __future__ import annotations

from lark import Transformer, v_args

from .ast import (
    CreateSink, CreateSource, CreateState, CreateStreamAsSelect, DropNode, Eval, Explain, InsertInto,
    LoadState, Param, SaveState, SourceControl, UpdateNode,
)
from .transform_base import StaticSyntaxError, ident, span_of
from .transform_cte import CteRules
from .transform_expr import ExpressionRules
from .transform_join import JoinRules
from .transform_match import MatchRules
from .transform_select import SelectRules

__all__ = ["BQLTransformer", "StaticSyntaxError"]


class BQLTransformer(MatchRules, SelectRules, JoinRules, CteRules, ExpressionRules, Transformer):
    """Parse tree → AST. ``text`` is the parsed source (some rules look at the raw characters)."""

    def __init__(self, text: str):
        super().__init__(visit_tokens=False)
        self.text = text

    # ------------------------------------------------------------------ scripts

    def start(self, meta, *statements):
        return list(statements)

    # ------------------------------------------------------------------ parameters

    def param(self, meta, name, value):
        return Param(ident(name), value, span=span_of(meta))

    def with_params(self, meta, *params):
        return ("with", tuple(params))

    def set_params(self, meta, *params):
        return ("set", tuple(params))

    def tag(self, meta, tok):
        return ("tag", ident(tok))

    def create_if_not_saved(self, meta, params=None):
        return ("create", params[1] if params else ())

    # ------------------------------------------------------------------ statements

    def paused(self, meta, *toks):
        return bool(toks)

    def create_source(self, meta, paused, name, type_name, params=None):
        return CreateSource(ident(name), ident(type_name), _params(params), paused,
                            span=span_of(meta))

    def create_sink(self, meta, name, type_name, params=None):
        return CreateSink(ident(name), ident(type_name), _params(params), span=span_of(meta))

    def create_state(self, meta, name, type_name, params=None):
        return CreateState(ident(name), ident(type_name), _params(params), span=span_of(meta))

    def create_stream(self, meta, name, select):
        return CreateStreamAsSelect(ident(name), select, span=span_of(meta))

    def node_kind(self, meta, tok):
        return str(tok).lower()

    drop_kind = source_action = node_kind

    def update_node(self, meta, kind, name, params):
        return UpdateNode(kind, ident(name), params[1], span=span_of(meta))

    def drop_node(self, meta, kind, name):
        return DropNode(kind, ident(name), span=span_of(meta))

    def insert_into(self, meta, sink, stream):
        return InsertInto(ident(sink), ident(stream), span=span_of(meta))

    def source_control(self, meta, action, name):
        return SourceControl(action, ident(name), span=span_of(meta))

    def save_state(self, meta, name, tag=None):
        return SaveState(ident(name), tag[1] if tag else None, span=span_of(meta))

    def load_state(self, meta, name, type_name, *opts):
        found = dict(opts)
        create = "create" in found
        return LoadState(ident(name), ident(type_name), found.get("tag"), found.get("set", ()),
                         create, found.get("create", ()), span=span_of(meta))

    def eval_stmt(self, meta, expr, on=None):
        return Eval(expr, on, span=span_of(meta))

    def explain_stmt(self, meta, statement):
        return Explain(statement, span=span_of(meta))


def _own_rules(cls):
    """Copy the mixins' rule methods into ``cls`` (lark's v_args wraps only a class's own methods)."""
    for mixin in (MatchRules, SelectRules, JoinRules, CteRules, ExpressionRules):
        for name, value in vars(mixin).items():
            if not name.startswith("_") and callable(value) and name not in vars(cls):
                setattr(cls, name, value)
    return v_args(inline=True, meta=True)(cls)


BQLTransformer = _own_rules(BQLTransformer)


def _params(params) -> tuple:
    return params[1] if params else ()

