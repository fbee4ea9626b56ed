"""The generated code of ``group_batch``'s light loops: a statement's checks, aggregate values, output
map and group updates as source lines (``Shape``), and the loops built from them — ``rstream_loop``
(RSTREAM without HAVING: the output order kept as two lists, changed only where a group moved) and
``changed_loop`` (HAVING, ISTREAM: each step's changed groups evaluated once, their current rows kept on
the groups).

A light group is a list ``[positions, key, key value, (values, ints, int total, abs total, chain) per
summed field, current row]``; the chain is the values' left-to-right float sum (``SumState``'s: a row
joining extends it by one addition, a row leaving drops it to None and the next value that needs it
recomputes it); the current row (the last slot) is the group's row in the output relation,
None when it has none (HAVING rejects it, or it is new).
"""
from __future__ import annotations

from typing import Any

from .aggregates import CountAllState, CountState, SumState

SLOTS = 5  # a summed field's slots in a light group: values, ints, int total, abs total, chain


class Shape:
    """The parts of one statement's generated loop (see ``group_batch.LightBatch``)."""

    def __init__(self, key_name: str | None, fields: list[str], needs: dict[str, bool], sums: list[int],
                 at: dict[int, int], values: list[list[str]], cells: list[tuple[str, int]]):
        self.key_name, self.fields, self.needs, self.sums, self.at = key_name, fields, needs, sums, at
        self.values, self.cells = values, cells

    def checks(self, fail: str, indent: str) -> list[str]:
        """Lines reading ``d``'s key (``key``, ``kv``) and fields (``a<m>``, ``t<m>``), ``fail`` when one
        is outside what the loop takes."""
        lines = ["if type(d) is not dict:", f"    {fail}"]
        if self.key_name is None:
            lines.append("key = kv = ()")
        else:
            lines += [f"kv = d.get({self.key_name!r}, MISSING)", "t = type(kv)", "if t is int:",
                      "    key = kv", "elif t is str:", "    key = ('s', kv)", "else:", f"    {fail}"]
        for m, f in enumerate(self.fields):
            lines.append(f"a{m} = d.get({f!r}, MISSING)")
            if self.needs[f]:
                # ints within int64 (a float of a larger one may overflow where the general step drops)
                lines += [f"t{m} = type(a{m})",
                          f"if t{m} is not float and (t{m} is not int or not INT_MIN <= a{m} <= INT_MAX):",
                          f"    {fail}"]
            else:
                lines += [f"if a{m} is MISSING or a{m} is None:", f"    {fail}"]
        return [indent + line for line in lines]

    def data(self, g: str, indent: str) -> list[str]:
        """Lines computing ``data``, the output map of light group ``g``."""
        lines = [line.format(v=f"v{j}", g=g) for j, code in enumerate(self.values) for line in code]
        cells = ", ".join(f"{label!r}: {f'v{j}' if j >= 0 else g + '[2]'}" for label, j in self.cells)
        lines.append(f"data = {{{cells}}}")
        return [indent + line for line in lines]

    def pop(self, g: str, indent: str) -> list[str]:
        """Lines taking light group ``g``'s first row out of it."""
        lines = [f"{g}[0].popleft()"]
        for m in self.sums:
            a = self.at[m]
            lines += [f"v = {g}[{a}].popleft()", f"{g}[{a + 4}] = None", "if type(v) is not float:",
                      f"    {g}[{a + 1}] -= 1", f"    {g}[{a + 2}] -= v", f"    {g}[{a + 3}] -= abs(v)"]
        return [indent + line for line in lines]

    def push(self, indent: str) -> list[str]:
        """Lines adding the new row (position ``pos``, values ``a<m>``) to light group ``g``."""
        lines = ["g[0].append(pos)"]
        for m in self.sums:
            a = self.at[m]
            lines += [f"g[{a}].append(a{m})", f"if (cs := g[{a + 4}]) is not None:",
                      f"    g[{a + 4}] = cs + a{m}", f"if t{m} is not float:", f"    g[{a + 1}] += 1",
                      f"    g[{a + 2}] += a{m}", f"    g[{a + 3}] += abs(a{m})"]
        return [indent + line for line in lines]

    def new_group(self) -> str:
        return "[deque(), key, kv" + ", deque(), 0, 0, 0, 0.0" * len(self.sums) + ", None]"

    @property
    def cur(self) -> int:
        """The index of a light group's current row."""
        return 3 + SLOTS * len(self.sums)


def _head(shape: Shape, where: bool, timed: bool) -> list[str]:
    """The loop's start and, per tuple, its checks before anything changes (``break``: the general step
    takes the tuple): the fields, WHERE's verdict (``passes``), the time window's order (``ts``,
    ``limit``), the global group keeping a row."""
    lines = ["def loop(tuples, win, groups, poss, datas, pos):", "    out = []", "    append = out.append",
             "    for tup in tuples:", "        d = tup.data",
             *shape.checks("break", "        ")]
    if where:
        lines += ["        try:", "            verdict = PREDICATE(d)", "        except Exception:",
                  "            break", "        if verdict is FALLBACK:", "            break",
                  "        passes = verdict is not None"]
    if timed:
        lines += ["        ts = tup.ts", "        if win and ts < win[-1][0]:", "            break",
                  "        try:", "            limit = ts - SPAN", "        except Exception:",
                  "            break"]
    if where and shape.key_name is None:  # the global group keeps a row: over none it is the general path's
        leaving = ("sum(1 for e in takewhile(lambda e: e[0] < limit, win) if e[1] is not None)" if timed
                   else "(1 if len(win) >= SIZE and win[0] is not None else 0)")
        lines += ["        if not passes:", "            g = groups.get(())",
                  f"            if g is None or len(g[0]) <= {leaving}:", "                break"]
    return lines


def _admitted(add: list[str], where: bool, timed: bool) -> list[str]:
    """The loop body's lines ``add`` (the new row joins its group ``g``) under WHERE's verdict: a row WHERE
    drops takes its place in the window without a group (``g`` None)."""
    if not where:
        return ["        " + line for line in add]
    return ["        if passes:", *("            " + line for line in add), "        else:",
            f"            win.append({'(ts, None)' if timed else 'None'})", "            g = None"]


def rstream_loop(shape: Shape, where: bool, timed: bool) -> list[str]:
    """``loop(tuples, win, groups, poss, datas, pos)`` -> (answers, the next pos): one answer per tuple
    taken (an arrival's eid follows from the window's)."""
    lines = _head(shape, where, timed)
    lines += ["        moved = None"]
    if timed:
        lines += ["        while win and win[0][0] < limit:", "            og = win.popleft()[1]",
                  "            if og is not None:", *shape.pop("og", "                "),
                  "                if moved is None:", "                    moved = {}",
                  "                if og[1] not in moved:", "                    del poss[0], datas[0]",
                  "                    moved[og[1]] = og", "                if not og[0]:",
                  "                    del groups[og[1]], moved[og[1]]"]
    else:
        lines += ["        if len(win) >= SIZE:", "            og = win.popleft()",
                  "            if og is not None:",
                  *shape.pop("og", "                "), "                del poss[0], datas[0]",
                  "                if og[0]:", "                    moved = og", "                else:",
                  "                    del groups[og[1]]"]
    if timed:
        add = ["g = groups.get(key)", "if g is None:", f"    g = groups[key] = {shape.new_group()}",
               "    fresh = True", "else:", "    fresh = False", *shape.push(""),
               "win.append((ts, g))", "pos += 1"]
        again = "moved is not None and moved.get(key) is g"
        # the moved groups re-placed (a moved g among them), then g
        place = ["if moved:", "    for og in moved.values():", *shape.data("og", "        "),
                 "        fp = og[0][0]", "        i = bisect_left(poss, fp)", "        poss.insert(i, fp)",
                 "        datas.insert(i, data)",
                 "if fresh:", *shape.data("g", "    "), "    poss.append(g[0][0])", "    datas.append(data)",
                 f"elif not ({again}):", *shape.data("g", "    "),
                 "    datas[bisect_left(poss, g[0][0])] = data"]
        if where:  # g when WHERE kept its row
            place = [line.replace("if fresh:", "if g is not None and fresh:")
                     .replace(f"elif not ({again}):", f"elif g is not None and not ({again}):")
                     for line in place]
    else:  # g first (a new group is last, a moved g takes its next row's place), then a moved other group
        add = ["g = groups.get(key)", "if g is None:", f"    g = groups[key] = {shape.new_group()}",
               *shape.push("    "), *shape.data("g", "    "), "    poss.append(pos)",
               "    datas.append(data)",
               "else:", *shape.push("    "), *shape.data("g", "    "), "    if g is moved:",
               "        i = bisect_left(poss, g[0][0])", "        poss.insert(i, g[0][0])",
               "        datas.insert(i, data)", "    else:",
               "        datas[bisect_left(poss, g[0][0])] = data",
               "win.append(g)", "pos += 1"]
        place = ["if moved is not None and moved is not g:", *shape.data("moved", "    "),
                 "    fp = moved[0][0]", "    i = bisect_left(poss, fp)", "    poss.insert(i, fp)",
                 "    datas.insert(i, data)"]
    lines += _admitted(add, where, timed)
    lines += ["        " + line for line in place]
    lines += ["        append(datas[:] if datas else None)", "    return out, pos", ""]
    return lines


def changed_loop(shape: Shape, where: bool, timed: bool, istream: bool, having: bool,
                 floats: list[int]) -> list[str]:
    """``rstream_loop``'s loop for RSTREAM with HAVING and for ISTREAM (with or without it): each step
    collects the groups it changed (by key), then evaluates each once. RSTREAM keeps the output order's
    two lists: a group leaves them when its first row leaves (it is their head), and re-enters at its
    first row's place when HAVING keeps it. ISTREAM emits a changed group's new row when it differs from
    its current row (BQL's equality of these rows is Python's: ints, floats and strings, the key making
    two groups' rows differ), in the order of the groups' first rows; an emptied group re-made by the
    same step keeps its current row. A NaN in an ISTREAM row (an item of its own to the emitter) raises:
    the general step takes the run. ``floats``: the aggregates whose values may be floats."""
    c = shape.cur
    lines = _head(shape, where, timed) + ["        changed = {}"]
    evict = shape.pop("og", "")
    if not istream:
        evict += [f"if og[{c}] is not None:", "    del poss[0], datas[0]", f"    og[{c}] = None"]
    evict += ["changed[og[1]] = og", "if not og[0]:", "    del groups[og[1]]"]
    if timed:
        lines += ["        while win and win[0][0] < limit:", "            og = win.popleft()[1]",
                  "            if og is not None:", *("                " + line for line in evict)]
    else:
        lines += ["        if len(win) >= SIZE:", "            og = win.popleft()",
                  "            if og is not None:",
                  *("                " + line for line in evict)]
    add = ["g = groups.get(key)", "if g is None:", f"    g = groups[key] = {shape.new_group()}"]
    if istream:
        add += ["    og = changed.get(key)", "    if og is not None:", f"        g[{c}] = og[{c}]"]
    add += [*shape.push(""), "win.append((ts, g))" if timed else "win.append(g)", "pos += 1",
            "changed[key] = g"]
    lines += _admitted(add, where, timed)
    values = ", ".join(f"v{j}" for j in range(len(shape.values)))
    keeps = f"HAVING(Env(NO_TUPLES, [{values}], None)) is True"
    if istream:
        evaluate = ["    if c[0]:", *shape.data("c", "        ")]
        if having:
            evaluate += [f"        if not {keeps}:", "            data = None"]
        if floats:
            evaluate += [f"        if {' or '.join(f'v{j} != v{j}' for j in floats)}:",
                         "            raise FloatingPointError('a NaN row')"]
        evaluate += ["    else:", "        data = None",
                     f"    if data is not None and data != c[{c}]:", "        if em is None:",
                     "            em = [(c[0][0], data)]", "        else:",
                     "            em.append((c[0][0], data))",
                     f"    c[{c}] = data"]
        lines += ["        em = None", "        for c in changed.values():",
                  *("        " + line for line in evaluate),
                  "        if em is None:", "            append(None)", "        else:",
                  "            if len(em) > 1:", "                em.sort(key=FIRST_ITEM)",
                  "            append([e[1] for e in em])"]
    else:
        evaluate = ["    if not c[0]:", "        continue", *shape.data("c", "    "), f"    keeps = {keeps}",
                    "    fp = c[0][0]", f"    if c[{c}] is not None:", "        i = bisect_left(poss, fp)",
                    "        if keeps:", f"            datas[i] = c[{c}] = data", "        else:",
                    "            del poss[i], datas[i]", f"            c[{c}] = None", "    elif keeps:",
                    "        i = bisect_left(poss, fp)", "        poss.insert(i, fp)",
                    "        datas.insert(i, data)",
                    f"        c[{c}] = data"]
        lines += ["        for c in changed.values():", *("        " + line for line in evaluate),
                  "        append(datas[:] if datas else None)"]
    return lines + ["    return out, pos", ""]


def aggregate_fields(groups: Any) -> list[tuple[Any, Any]]:
    """(state class, plain field or None) of each aggregate, in aggregate order."""
    fields: dict[int, Any] = {j: field for j, field, _ in groups.stateful}
    return [(factory, fields.get(j)) for j, factory in enumerate(groups.factories)]


def value_lines(factory: Any, at: int | None) -> list[str]:
    """The lines setting ``{v}`` to an aggregate's value over light group ``{g}`` (its state class's
    ``result``; ``str.format`` fills in both names). A float sum reads the group's chain, recomputing and
    keeping it when a row left (inline: a call per tuple cost B3's GROUP BY ~0.1 µs)."""
    if factory is CountAllState or factory is CountState:
        return ["{v} = len({g}[0])"]
    assert at is not None
    vals, ints, total, absolute, chain = (f"{{g}}[{at + i}]" for i in range(SLOTS))
    floats = ["    {v} = " + chain, "    if {v} is None:",  # a sum of floats is a float
              f"        {{v}} = {chain} = FSUM({vals}, 0.0) if not {ints} else FSUM(map(float, {vals}), 0.0)"]
    if factory is SumState:
        return [f"if {ints} == len({vals}):", f"    {{v}} = WRAP({total})", "else:", *floats]
    return [f"if {ints} == len({vals}) and {absolute} <= EXACT:", f"    {{v}} = float({total}) / len({vals})",
            "else:", *floats, f"    {{v}} = {{v}} / len({vals})"]
