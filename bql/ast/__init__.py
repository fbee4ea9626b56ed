"""The BQL abstract syntax tree: frozen dataclasses with source spans.

Import nodes from here: ``from sbpy.bql.ast import Select, FieldRef, ...``.
"""
from .base import Node, node
from .expressions import *  # noqa: F403
from .expressions import Expr, PathStep
from .patterns import *  # noqa: F403
from .patterns import PatternTerm
from .statements import *  # noqa: F403
from .statements import FromItem, Statement
