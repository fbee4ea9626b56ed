"""``state_function.journal_rows``: a group's pandas frames become journal rows in seq order."""
import pandas as pd

from sbpy.bql.spark.state_function import journal_rows


def _frame(rows, columns=("seq", "input", "ts", "data", "end", "error")):
    return pd.DataFrame.from_records(rows, columns=list(columns))


def test_frames_merge_in_seq_order_with_python_values():
    a = _frame([(5, "s", 50, '{"a":1}', False, None), (1, "s", 10, None, True, None)])
    b = _frame([(3, "t", 30, None, False, "not a tuple"), (2, "s", 20, '{"b":2}', False, None)])
    rows = journal_rows(iter([a, _frame([]), b]))
    assert rows == [(1, "s", 10, None, True, None), (2, "s", 20, '{"b":2}', False, None),
                    (3, "t", 30, None, False, "not a tuple"), (5, "s", 50, '{"a":1}', False, None)]
    assert all(type(r[0]) is int and type(r[2]) is int and type(r[4]) is bool for r in rows)


def test_frames_without_the_error_column_and_no_frames():
    cols = ("seq", "input", "ts", "data", "end")
    rows = journal_rows(iter([_frame([(2, "s", 1, "{}", False), (1, "s", 1, "{}", False)], cols)]))
    assert rows == [(1, "s", 1, "{}", False), (2, "s", 1, "{}", False)]
    assert journal_rows(iter([])) == []
