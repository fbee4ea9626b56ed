"""Table prefixes (``stream:field``) and FROM names.

- Each FROM item is known by its alias, else its stream (or UDSF) name; names must be distinct.
- With several FROM items every field reference (and ``ts()``) needs a prefix naming one of them.
- With one FROM item prefixes are all present or all absent; either way a prefix must name it.
Plain ``*`` is fine everywhere; ``x:*`` must name a FROM item and counts as a prefixed reference
(SensorBee's ``validateReferences``: ``SELECT a, t:* FROM t`` mixes the two forms, ``SELECT t:a, *`` does not).
"""
from __future__ import annotations

from ..ast import (
    FieldRef,
    FromItem,
    HistoryTable,
    MatchRecognize,
    Select,
    Statement,
    StreamRef,
    TimestampRef,
    UdsfCall,
    Wildcard,
    WindowFunction,
)
from .aggregates import field_text
from .context import Context, fail, select_exprs, selects_of, walk


def from_name(item: FromItem) -> str:
    """The name a FROM item is referred to by: its alias, else its stream or UDSF name."""
    alias = getattr(item, "alias", None)
    if alias:
        return alias
    if isinstance(item, (StreamRef, UdsfCall)):
        return item.name
    if isinstance(item, WindowFunction):
        return item.stream
    if isinstance(item, MatchRecognize):
        return item.input.alias or item.input.name
    if isinstance(item, HistoryTable):
        return item.stream
    return "?"


def _check_names(select: Select) -> dict[str, FromItem]:
    names: dict[str, FromItem] = {}
    for item in select.from_items:
        name = from_name(item)
        key = name.lower()
        if key in names:
            raise fail(
                f"stream '{name}' appears more than once in FROM; give each occurrence a distinct alias with AS",
                item,
            )
        names[key] = item
    return names


def _refs(select: Select):
    for _, expr in select_exprs(select):
        for n in walk(expr):
            if isinstance(n, (FieldRef, TimestampRef, Wildcard)):
                yield n


def _text(ref) -> str:
    if isinstance(ref, FieldRef):
        return field_text(ref)
    if isinstance(ref, TimestampRef):
        return f"{ref.stream}:ts()" if ref.stream else "ts()"
    return f"{ref.stream}:*" if ref.stream else "*"


def check_prefixes(stmt: Statement, ctx: Context) -> None:
    for select in selects_of(stmt):
        names = _check_names(select)
        refs = list(_refs(select))
        for ref in refs:
            if ref.stream is not None and ref.stream.lower() not in names:
                known = ", ".join(f"'{from_name(i)}'" for i in select.from_items)
                raise fail(f"stream '{ref.stream}' in '{_text(ref)}' is not in FROM (known: {known})", ref)
        fields = [r for r in refs if not (isinstance(r, Wildcard) and r.stream is None)]
        if len(select.from_items) > 1:
            for ref in fields:
                if isinstance(ref, Wildcard):
                    continue
                if ref.stream is None:
                    raise fail(
                        f"'{_text(ref)}' needs a stream prefix (such as"
                        f" '{from_name(select.from_items[0])}:') when FROM has several streams",
                        ref,
                    )
        elif fields:
            prefixed = [r for r in fields if r.stream is not None]
            if prefixed and len(prefixed) != len(fields):
                bare = next(r for r in fields if r.stream is None)
                raise fail(
                    f"'{_text(bare)}' has no stream prefix while '{_text(prefixed[0])}' has one;"
                    " prefixes must be used on all fields or none",
                    bare,
                )
