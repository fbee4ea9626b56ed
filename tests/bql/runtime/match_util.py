"""Helpers for the MATCH_RECOGNIZE tests: build a processor from BQL text and feed it rows."""
import datetime as dt

from sbpy.bql.runtime import build_processor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def mr(body, select="*", stream="t", tail="", **kw):
    """A processor for ``SELECT RSTREAM <select> FROM <stream> MATCH_RECOGNIZE (<body>)``."""
    from sbpy.bql.runtime.match import MatchRecognizeProcessor

    stmt = parse_select(f"SELECT RSTREAM {select} FROM {stream} MATCH_RECOGNIZE ({body}) {tail}")
    if kw:
        return MatchRecognizeProcessor(stmt, None, **kw)
    return build_processor(stmt)


def feed(proc, rows, stream="t", finish=True, per_step=False):
    """Feed dict rows; return the outputs (data dicts), or a list per step with ``per_step``."""
    steps = []
    for i, r in enumerate(rows):
        res = proc.process(Tuple(dict(r), T0 + dt.timedelta(seconds=i), i + 1, stream))
        steps.append([t.data for t in res.outputs])
    if finish:
        steps.append([t.data for t in proc.finish(stream).outputs])
    return steps if per_step else [row for step in steps for row in step]


def run(body, rows, select="*", **kw):
    return feed(mr(body, select, **kw), rows)


def ids(rows, key="id"):
    return [r[key] for r in rows]
