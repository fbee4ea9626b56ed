"""String expressions on the native tier: ``||`` and the built-ins ``lower`` / ``upper`` as Spark columns.

``native_stage`` compiles a string expression of a WHERE or a select list into a *text node*
(``text_node``): ``("field", slot)`` (a field of class ``s``: a JSON string without escapes),
``("string", slot)`` (a field cast to string: a string, an int's digits, ``true``/``false``),
``("lit", s)``, ``("cat", x, y)`` (``x || y``) or ``("case", "lower"|"upper", x)``. Its columns
(``TextColumns.value``) are two:

    raw   -- the string itself (NULL where the row is refused: a field of another class, a case map of
             a string that is not ASCII), compared with ``_op`` as Spark compares strings (UTF-8 bytes:
             code-point order, Python's)
    body  -- the JSON text between the quotes of that string as the kernel's sink writes it
             (``jsonio.to_json``): a field's text between its quotes (it needs no escape), a literal's
             ``to_json`` text between its quotes, computed at compile time, and the concatenation of
             the parts' bodies (JSON escapes one character at a time)

The kernel's ``||`` (``operators.concat``) concatenates two strings and gives NULL for a NULL operand
(an error for other types), ``lower``/``upper`` (``builtin_string._case_map``) map an ASCII string with
Python's ASCII case map, which Spark's ``lower``/``upper`` apply to ASCII text too; anything else —
a NULL, another type, a non-ASCII case map — is refused (NULL), so the row takes the kernel. A cast to
string (``conversions.to_string``) keeps a string, writes an int's digits and a bool's word (the JSON
texts of those classes); a float (SensorBee's format), NULL or a container is refused. A case map
is compiled only over parts whose body is the string itself (no literal that JSON escapes), so the
mapped string is its own body.
"""
from __future__ import annotations

from typing import Any

from sbpy.bql.ast import BinaryOp, Cast, FieldRef, Literal

from .native_arith import builtin_call, describe

CASE_FUNCTIONS = ("lower", "upper")


class NotText(Exception):
    """The expression has a part that is not a string expression the native tier compiles."""


def text_compiled(e: Any, functions: Any = None) -> bool:
    """Whether ``e`` is a text node's expression at its top: ``x || y``, or ``lower``/``upper`` that
    ``functions`` (the topology's registry; None: the built-ins) resolves to the built-in."""
    if type(e) is BinaryOp:
        return e.op == "||"
    if type(e) is Cast:
        return e.type_name == "string"
    return builtin_call(e, CASE_FUNCTIONS, functions)


def text_node(e: Any, value: Any, functions: Any = None) -> tuple:
    """The text node of a string expression (see the module doc); ``value(field_ref)`` is ``native_stage``'s
    ``_Value`` of a field of the stage's input row."""
    if type(e) is Literal:
        if type(e.value) is not str:
            raise NotText(f"a {type(e.value).__name__} literal")
        return ("lit", e.value)
    if type(e) is FieldRef:
        val = value(e)
        if val.slot is not None:
            return ("field", val.slot)
        if val.text is not None:
            return val.text
        if type(val.const) is str:
            return ("lit", val.const)
        raise NotText("a value an earlier stage computed other than a string")
    if not text_compiled(e, functions):
        raise NotText(describe(e))
    if type(e) is BinaryOp:
        return ("cat", text_node(e.left, value, functions), text_node(e.right, value, functions))
    if type(e) is Cast:
        return _string_cast(e.operand, value, functions)
    inner = text_node(e.args[0], value, functions)
    if not _plain(inner):
        raise NotText("a case map of a literal the JSON text escapes")
    return ("case", e.name, inner)


def _string_cast(e: Any, value: Any, functions: Any) -> tuple:
    """The text node of ``e::string``."""
    if type(e) is Literal and type(e.value) in (int, bool):
        return ("lit", str(e.value).lower() if type(e.value) is bool else str(e.value))
    if type(e) is FieldRef:
        val = value(e)
        if val.slot is not None:
            return ("string", val.slot)
    return text_node(e, value, functions)  # a string stays itself; anything else is refused there


def _plain(node: tuple) -> bool:
    """Whether the node's string is its own JSON body (every literal in it needs no escape)."""
    from sbpy.bql.jsonio import to_json

    if node[0] == "lit":
        return to_json(node[1])[1:-1] == node[1]
    if node[0] == "cat":
        return _plain(node[1]) and _plain(node[2])
    return True


class TextColumns:
    """Columns of text nodes over one chain's fields (``cls``/``text``: each slot's class and JSON text
    columns); each use appends its guard to ``guards``."""

    def __init__(self, cls: list[Any], text: list[Any], guards: list[Any]):
        self.cls, self.text, self.guards = cls, text, guards

    def value(self, node: tuple) -> tuple[Any, Any]:
        """``(raw, body)`` of a node (see the module doc); both NULL where the row is refused."""
        from pyspark.sql import functions as F
        from sbpy.bql.jsonio import to_json

        kind = node[0]
        if kind == "lit":
            return F.lit(node[1]), F.lit(to_json(node[1])[1:-1])
        if kind == "field":
            slot = node[1]
            raw = F.when(self.cls[slot] == "s", unquote(self.text[slot]))
            return raw, raw
        if kind == "string":  # a string's own text, an int's digits, a bool's word: each its own JSON body
            cls, text = self.cls[node[1]], self.text[node[1]]
            raw = F.when(cls == "s", unquote(text)).when((cls == "i") | (cls == "b"), text)
            return raw, raw
        if kind == "cat":
            (rx, bx), (ry, by) = self.value(node[1]), self.value(node[2])
            return F.concat(rx, ry), F.concat(bx, by)
        raw, _body = self.value(node[2])
        ascii_only = F.length(raw) == F.octet_length(raw)
        mapped = F.when(ascii_only, F.lower(raw) if node[1] == "lower" else F.upper(raw))
        return mapped, mapped

    def raw(self, node: tuple) -> Any:
        """The node's string for a comparison; rows without one are refused."""
        raw, _body = self.value(node)
        self.guards.append(raw.isNotNull())
        return raw

    def json(self, node: tuple) -> Any:
        """The node's JSON text (a string token) for the output line; rows without one are refused."""
        from pyspark.sql import functions as F

        _raw, body = self.value(node)
        self.guards.append(body.isNotNull())
        return F.concat(F.lit('"'), body, F.lit('"'))


def unquote(text: Any) -> Any:
    """The string of a JSON string token without escapes: the text between its quotes."""
    from pyspark.sql import functions as F

    return text.substr(F.lit(2), F.length(text) - F.lit(2))
