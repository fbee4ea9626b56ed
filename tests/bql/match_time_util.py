"""Helpers of the MATCH_RECOGNIZE time-handling tests: a processor from a clause body, rows fed one
step at a time with everything each step produced (outputs and dropped tuples)."""
import datetime as dt

from sbpy.bql.runtime.match import MatchRecognizeProcessor
from sbpy.bql.runtime.processor import Tuple
from sbpy.bql.runtime.testing import parse_select

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def processor(body, select="*", engine=None, bound=None, stream="s"):
    """``SELECT RSTREAM <select> FROM <stream> MATCH_RECOGNIZE (<body>)`` (parsed and analyzed)."""
    stmt = parse_select(f"SELECT RSTREAM {select} FROM {stream} MATCH_RECOGNIZE ({body})")
    return MatchRecognizeProcessor(stmt, None, reorder_bound=bound, engine=engine)


def step_view(res):
    return ([(o.data, o.ts, o.seq) for o in res.outputs],
            [(d.tuple.data, d.error, d.event_type) for d in res.dropped])


def feed_steps(proc, rows, stream="s", finish=True, ts_of=None):
    """One ``(outputs, dropped)`` per row (then one for ``finish``); a row's tuple timestamp is
    ``ts_of(row)`` or ``T0 + i seconds``."""
    steps = []
    for i, r in enumerate(rows):
        ts = ts_of(r) if ts_of is not None else T0 + dt.timedelta(seconds=i)
        steps.append(step_view(proc.process(Tuple(dict(r), ts, i + 1, stream))))
    if finish:
        steps.append(step_view(proc.finish(stream)))
    return steps


def outputs(steps):
    """The output data of every step, in order."""
    return [o[0] for step in steps for o in step[0]]


def dropped(steps):
    return [d for step in steps for d in step[1]]
