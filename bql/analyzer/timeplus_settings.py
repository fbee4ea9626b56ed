"""The Timeplus clauses after GROUP BY that shape a whole query: ``PARTITION BY`` and ``SETTINGS``.

Both belong to Timeplus queries only (``timeplus_query.is_timeplus_select``); elsewhere each is an
analyzer error at the clause, as is anything below that sbpy does not run (docs/timeplus.md):

- ``PARTITION BY e, ...`` splits the input into substreams, one per value of the keys, each running
  the query on its own (``runtime/timeplus/substreams.py``). The keys are evaluated on the input tuple
  before WHERE, like the keys of a session, so they cannot hold an aggregate call, ``lag`` or
  ``emit_version()`` (the last two are reported by their own placement checks).
- ``SETTINGS name = value, ...`` (written as MATCH_RECOGNIZE's ``SETTINGS``, ``MatchSetting`` nodes):
  the settings Proton defines that have a meaning here are listed in ``QUERY_SETTINGS``; any other name
  is an error naming it. ``max_keep_windows`` (a positive integer) is accepted and changes nothing:
  Proton keeps the range of ``EMIT ... LAST x`` as that many sub-windows of the periodic interval and
  refuses a range needing more; sbpy keeps the rows of the exact range (``emit_extras.LastRange``).
"""
from __future__ import annotations

from ..ast import FunctionCall, Select
from .context import Context, fail, walk

QUERY_SETTINGS = ("max_keep_windows",)
_WHERE = "a Timeplus query (tumble/hop/session, a bare stream or EMIT)"


def _check_settings(select: Select, timeplus: bool) -> None:
    if not select.settings:
        return
    if not timeplus:
        raise fail(f"SETTINGS can only be used in {_WHERE}", select.settings[0])
    for setting in select.settings:
        if setting.name not in QUERY_SETTINGS:
            known = ", ".join(QUERY_SETTINGS)
            raise fail(f"unknown setting '{setting.name}' (a Timeplus query accepts: {known})", setting)
        value = setting.value
        if type(value) is not int or value < 1:
            raise fail(f"setting '{setting.name}' must be a positive integer, got {value!r}", setting)


def _check_partition_by(select: Select, timeplus: bool, ctx: Context) -> None:
    if not select.partition_by:
        return
    if not timeplus:
        raise fail(f"PARTITION BY can only be used in {_WHERE}", select.partition_by[0])
    for key in select.partition_by:
        for node in walk(key):
            if isinstance(node, FunctionCall) and ctx.is_aggregate(node):
                raise fail(f"PARTITION BY cannot contain the aggregate '{node.name}'", node)


def check_query_clauses(select: Select, timeplus: bool, ctx: Context) -> None:
    """``PARTITION BY`` and ``SETTINGS`` of one SELECT (``timeplus``: whether it is a Timeplus query)."""
    _check_partition_by(select, timeplus, ctx)
    _check_settings(select, timeplus)
