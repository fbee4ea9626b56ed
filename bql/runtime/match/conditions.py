"""Row-local DEFINE conditions compiled into one function: ``mask_at(rows, p)`` → the bit mask of the
pattern variables the row at position ``p`` satisfies (the automaton's input symbol).

A variable without a DEFINE condition is satisfied by every row (its bit is in ``always``). A condition
holds when it evaluates to TRUE; an evaluation error counts as not holding, as in the matcher.

Conditions of the common form ``operand <cmp> operand`` — ``<cmp>`` one of ``= != < <= > >=`` and each
operand a literal, a field of the row (one key) or ``PREV`` of one (one key, constant offset) — are
generated inline as Python source: the operands are read straight from the row dicts, same-typed
numbers and strings are compared with Python's operator (exactly what the BQL operator does for them),
every other pair goes through the BQL operator itself (comparisons of the same two operands share one
type guard). Any other condition calls its compiled closure
(``MRContext.compile_row_local`` or, failing that, the general view evaluation of a one-row match).
"""
from __future__ import annotations

from typing import Any, Callable

from ...ast import BinaryOp, KeyStep, Literal, Navigation, PatternFieldRef
from ...errors import BQLError
from ...eval.operators import _ORDERABLE, _SIMPLE, BINARY
from .views import Blocked, View

_CMP = {"=": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_EMPTY: dict = {}


def _operand(e: Any, var: str) -> tuple | None:
    """``("lit", value)`` or ``("field", key, back)`` (``back`` rows before the current one)."""
    if type(e) is Literal:
        return ("lit", e.value)
    back = 0
    if type(e) is Navigation and e.kind.lower() == "prev":
        back = 1 if e.offset is None else e.offset
        if type(back) is not int or back < 0:
            return None
        e = e.operand
    if (type(e) is PatternFieldRef and e.var in (None, var) and len(e.path) == 1
            and type(e.path[0]) is KeyStep):
        return ("field", e.path[0].key, back)
    return None


def simple_comparison(expr: Any, var: str) -> tuple | None:
    """``(op, left operand, right operand)`` when ``expr`` can be generated inline, else None."""
    if type(expr) is not BinaryOp or expr.op.lower() not in _CMP:
        return None
    left, right = _operand(expr.left, var), _operand(expr.right, var)
    if left is None or right is None:
        return None
    return expr.op.lower(), left, right


def _guard(fast: Callable) -> Callable[[Any, int], bool]:
    def holds(rows: Any, p: int) -> bool:
        try:
            return fast(rows, p) is True
        except (BQLError, Blocked):
            return False
    return holds


def _view_guard(fn: Callable, var: str, ctx: Any) -> Callable[[Any, int], bool]:
    def holds(rows: Any, p: int) -> bool:
        try:
            return fn(View(rows, p, [var], p, p, 1, ctx)) is True
        except (BQLError, Blocked):
            return False
    return holds


class RowMasks:
    """The bits of the pattern variables and ``mask_at`` for one DEFINE set (all row-local)."""

    def __init__(self, variables: list[str], conds: dict, exprs: dict, ctx: Any):
        """``conds``: var → (view fn, level, fast fn or None); ``exprs``: var → normalised condition."""
        self.bits = {v: 1 << i for i, v in enumerate(sorted(variables))}
        self.always = 0
        ns: dict[str, Any] = {"_EMPTY": _EMPTY, "BQLError": BQLError}
        body: list[str] = []
        fields: dict[tuple, str] = {}  # (key, back) -> local variable of the generated function
        groups: dict[tuple, list] = {}  # (left, right, fast types) -> [(op, bit)] of the inline comparisons
        self.inline: list[str] = []
        for var, bit in self.bits.items():
            if var not in conds:
                self.always |= bit
                continue
            fn, _level, fast = conds[var]
            if type(exprs[var]) is Literal:  # TRUE: every row; FALSE or NULL: none
                if exprs[var].value is True:
                    self.always |= bit
                continue
            simple = simple_comparison(exprs[var], var)
            if simple is None:
                name = f"_holds_{bit}"
                ns[name] = _guard(fast) if fast is not None else _view_guard(fn, var, ctx)
                body.append(f"    if {name}(rows, p):\n        m |= {bit}")
                continue
            self.inline.append(var)
            op, left, right = simple
            operands = []
            for k, o in enumerate((left, right)):
                if o[0] == "lit":
                    ns[f"_c{bit}_{k}"] = o[1]
                    operands.append(f"_c{bit}_{k}")
                else:  # each field read once (rows are not changed by the conditions)
                    name = fields.get(o[1:])
                    if name is None:
                        name = fields[o[1:]] = f"f{len(fields)}"
                    operands.append(name)
            ns[f"_op{bit}"] = BINARY[op]
            fast_types = "_ORDERABLE" if op in ("<", "<=", ">", ">=") else "_SIMPLE"
            ns[fast_types] = _ORDERABLE if fast_types == "_ORDERABLE" else _SIMPLE
            groups.setdefault((operands[0], operands[1], fast_types), []).append((op, bit))
        for (a, b, fast_types), tests in groups.items():  # one type guard per operand pair
            fast = "".join(f"        if {a} {_CMP[op]} {b}:\n            m |= {bit}\n" for op, bit in tests)
            slow = "\n".join(f"        try:\n            if _op{bit}({a}, {b}) is True:\n                m |= {bit}\n"
                             f"        except BQLError:\n            pass" for _, bit in tests)
            body.append(f"    _t = type({a})\n    if _t is type({b}) and _t in {fast_types}:\n{fast}    else:\n{slow}")
        self.namespace = ns
        self._fields = fields
        # a field ``n`` rows back is the one ``n - 1`` rows back of the row before: ``carried`` maps its
        # local to that one's (``inline_source`` with ``carry``)
        self.carried = {name: fields[(key, back - 1)] for (key, back), name in fields.items()
                        if back >= 1 and (key, back - 1) in fields}
        self._body = [line for chunk in body for line in chunk.split("\n")]  # sets the bits of ``m``
        head = ["def mask_at(rows, p):", f"    m = {self.always}"]
        if fields:
            head += ["    rl = rows.rows", "    i = p - rows.base"]
        self.source = "\n".join(head + self._reads("rl", "i", "    ", fields) + self._body + ["    return m"])
        exec(compile(self.source, "<MATCH_RECOGNIZE DEFINE masks>", "exec"), ns)  # noqa: S102
        self.mask_at: Callable[[Any, int], int] = ns["mask_at"]

    def _reads(self, rows_list: str, index: str, indent: str, fields: dict) -> list[str]:
        """Source lines binding the locals of ``fields`` ((key, back) → local) to the fields of the row
        ``back`` before the one at ``index`` of ``rows_list`` (NULL before the first kept row); a row
        read for several fields is bound to ``d<back>`` first (``_EMPTY`` before the first kept row)."""
        row = {n: f"{rows_list}[{index}].data" if n == 0 else
               f"({rows_list}[{index} - {n}].data if {index} >= {n} else _EMPTY)" for _, n in fields}
        shared = [n for n in row if sum(back == n for _, back in fields) > 1]  # (else read in place)
        return ([f"{indent}d{n} = {row[n]}" for n in sorted(shared)] +
                [f"{indent}{name} = {f'd{back}' if back in shared else row[back]}.get({key!r})"
                 for (key, back), name in fields.items()])

    def carry_cells(self) -> list[str]:
        """The variables ``inline_source`` with ``carry`` keeps from one row to the next (the position
        read and the carried fields); none when no field is carried."""
        return ["carry_at", *(f"carry_{name}" for name in self.carried)] if self.carried else []

    def inline_source(self, rows_list: str, index: str, indent: str, carry: bool = False) -> list[str]:
        """The body of ``mask_at`` as source lines to embed in another generated function (with
        ``namespace``): they set ``m`` for the row at ``index`` of ``rows_list``, whose position is
        in the local ``p`` and whose ``Rows`` object is in the local ``rows``.

        ``carry``: the embedding function keeps ``carry_cells`` between calls (None at first) and
        computes masks in row order with the rows kept at least as far back as the PREV reach: a
        field ``n`` rows back is then the one ``n - 1`` rows back read for the row before (the same
        row, not read again) when that row's mask was the last one computed (``carry_at``)."""
        lines = [f"{indent}m = {self.always}"]
        fields = self._fields
        if carry and self.carried:
            carried = self.carried
            plain = {f: n for f, n in fields.items() if n not in carried}
            lines += self._reads(rows_list, index, indent, plain)
            lines += [f"{indent}if carry_at == p - 1:",
                      *(f"{indent}    {name} = carry_{name}" for name in carried),
                      f"{indent}else:",
                      *self._reads(rows_list, index, indent + "    ",
                                   {f: n for f, n in fields.items() if n in carried}),
                      f"{indent}carry_at = p",
                      *(f"{indent}carry_{name} = {source}" for name, source in carried.items())]
        else:
            lines += self._reads(rows_list, index, indent, fields)
        return lines + [indent + line[4:] if line.startswith("    ") else line for line in self._body]
