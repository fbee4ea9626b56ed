"""The Nexmark queries of examples/nexmark as batch computations (pandas) over the generator's events.

Each ``qN(frames)`` answers, from the whole event list at once, what the streaming query ``qN.bql``
must have produced by the end of its input; the test compares the two row by row. The batch side
shares nothing with the BQL runtime but the generator's events and the JSON form of values
(``json_ready``, so that timestamps and 2 vs 2.0 compare as a file sink writes them).

- ``ORDERED`` queries (q0-q2) must match in order; the others as multisets (rows of one window or of
  one arriving tuple have no defined order);
- ``LAST_PER_KEY`` queries (q4, q6) are changelogs: the last row per key is the answer.

``script_for`` turns an example file into a test script: its CREATE SOURCE replaced by one with the
test's parameters, its sinks replaced by file sinks of the streams asked for.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from sbpy.bql.parser import parse_script
from sbpy.bql.runtime.testing import json_ready
from sbpy.plugins.builtin.nexmark_model import AUCTION, BID, EPOCH, PERSON, NexmarkConfig, events

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nexmark"
QUERIES = ("q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q11", "q12")
ORDERED = {"q0", "q1", "q2"}
LAST_PER_KEY = {"q4": "category", "q6": "seller"}


def script_for(query: str, source_with: str, sinks: dict[str, Path], paused: bool = True) -> str:
    """examples/nexmark/<query>.bql with ``CREATE [PAUSED] SOURCE nexmark TYPE nexmark WITH
    <source_with>`` and a file sink per ``sinks`` entry (stream name → path) instead of its own."""
    out = []
    for p in parse_script((EXAMPLES / f"{query}.bql").read_text()):
        kind = type(p.stmt).__name__
        if kind == "CreateSource":
            out.append(f"CREATE {'PAUSED ' if paused else ''}SOURCE nexmark TYPE nexmark WITH {source_with};")
        elif kind not in ("CreateSink", "InsertInto"):
            out.append(p.text.strip().rstrip(";") + ";")
    for stream, path in sinks.items():
        out.append(f'CREATE SINK {stream}_sink TYPE file WITH path = "{path}";')
        out.append(f"INSERT INTO {stream}_sink FROM {stream};")
    return "\n".join(out)


def frames(config: NexmarkConfig) -> dict[str, pd.DataFrame]:
    """The events as three frames (``person``, ``auction``, ``bid``), in generation order, with the
    times also as epoch milliseconds (``t``, ``expires_t``)."""
    rows: dict[int, list[dict[str, Any]]] = {PERSON: [], AUCTION: [], BID: []}
    for e in events(config):
        rows[e["event_type"]].append(e)
    out = {}
    for kind, name in ((PERSON, "person"), (AUCTION, "auction"), (BID, "bid")):
        df = pd.DataFrame(rows[kind])
        df["t"] = [_ms(v) for v in df["date_time"]] if len(df) else []
        if kind == AUCTION and len(df):
            df["expires_t"] = [_ms(v) for v in df["expires"]]
        out[name] = df
    return out


def _ms(ts: Any) -> int:
    return (ts - EPOCH).days * 86_400_000 + (ts - EPOCH).seconds * 1000 + (ts - EPOCH).microseconds // 1000


def _seconds(ms: int) -> int | float:
    """Epoch seconds as Timeplus windows give them: int when whole, else float."""
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


def _records(df: pd.DataFrame, columns: list[str], rename: dict[str, str] | None = None) -> list[Any]:
    """JSON-ready rows of ``columns`` (Python scalars, not numpy's)."""
    rename = rename or {}
    out = []
    for values in df[columns].itertuples(index=False, name=None):
        out.append(json_ready({rename.get(c, c): _py(v) for c, v in zip(columns, values)}))
    return out


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v


def _tumble(ms: pd.Series, size_ms: int) -> pd.Series:
    return (ms // size_ms) * size_ms


def q0(f: dict[str, pd.DataFrame]) -> list[Any]:
    return _records(f["bid"], ["auction", "bidder", "price", "date_time", "extra"])


def q1(f: dict[str, pd.DataFrame]) -> list[Any]:
    bid = f["bid"].assign(price=[0.908 * p for p in f["bid"]["price"].tolist()])
    return _records(bid, ["auction", "bidder", "price", "date_time", "extra"])


def q2(f: dict[str, pd.DataFrame]) -> list[Any]:
    bid = f["bid"]
    return _records(bid[bid["auction"] % 123 == 0], ["auction", "price"])


def q3(f: dict[str, pd.DataFrame]) -> list[Any]:
    a, p = f["auction"], f["person"]
    a = a[a["category"] == 10]
    p = p[p["state"].isin(["OR", "ID", "CA"])]
    j = a[["id", "seller"]].merge(p[["id", "name", "city", "state"]], left_on="seller", right_on="id",
                                  suffixes=("", "_p"))
    return _records(j, ["name", "city", "state", "id"])


def _winning(f: dict[str, pd.DataFrame], key: str) -> pd.DataFrame:
    """Per auction: the highest bid inside [date_time, expires] (auctions with such a bid only)."""
    a, b = f["auction"], f["bid"]
    j = b[["auction", "price", "t"]].merge(a[["id", key, "t", "expires_t"]], left_on="auction", right_on="id",
                                           suffixes=("", "_a"))
    j = j[(j["t"] >= j["t_a"]) & (j["t"] <= j["expires_t"])]
    return j.groupby(["id", key], as_index=False)["price"].max().rename(columns={"price": "final"})


def _average_by(f: dict[str, pd.DataFrame], key: str) -> list[Any]:
    g = _winning(f, key).groupby(key)["final"].agg(["sum", "count"]).reset_index()
    return [json_ready({key: _py(k), "avg_final": int(s) / int(n)})
            for k, s, n in g[[key, "sum", "count"]].itertuples(index=False, name=None)]


def q4(f: dict[str, pd.DataFrame]) -> list[Any]:
    return _average_by(f, "category")


def q6(f: dict[str, pd.DataFrame]) -> list[Any]:
    return _average_by(f, "seller")


def q5(f: dict[str, pd.DataFrame]) -> list[Any]:
    b = f["bid"]
    parts = []
    for back in range(0, 10_000, 2_000):  # hop 2 s / 10 s: the five windows holding each bid
        parts.append(pd.DataFrame({"auction": b["auction"], "start": _tumble(b["t"], 2_000) - back}))
    hops = pd.concat(parts)
    counts = hops.groupby(["auction", "start"], as_index=False).size().rename(columns={"size": "num"})
    best = counts.groupby("start", as_index=False)["num"].max().rename(columns={"num": "maxn"})
    j = counts.merge(best, on="start")
    j = j[j["num"] >= j["maxn"]].assign(starttime=lambda d: d["start"] // 1000)
    return _records(j, ["auction", "num", "starttime"])


def q7(f: dict[str, pd.DataFrame]) -> list[Any]:
    b = f["bid"].assign(start=lambda d: _tumble(d["t"], 10_000))
    best = b.groupby("start", as_index=False)["price"].max()
    j = b.merge(best, on=["start", "price"])
    return _records(j, ["auction", "price", "bidder", "date_time", "extra"])


def q8(f: dict[str, pd.DataFrame]) -> list[Any]:
    p = f["person"].assign(start=lambda d: _tumble(d["t"], 10_000))
    a = f["auction"].assign(start=lambda d: _tumble(d["t"], 10_000))
    p = p[["id", "name", "start"]].drop_duplicates()
    a = a[["seller", "start"]].drop_duplicates()
    j = p.merge(a, left_on=["id", "start"], right_on=["seller", "start"])
    return _records(j.assign(starttime=lambda d: d["start"] // 1000), ["id", "name", "starttime"])


def q11(f: dict[str, pd.DataFrame], gap_ms: int = 10_000, max_ms: int = 86_400_000) -> list[Any]:
    out = []
    for bidder, times in f["bid"].sort_values("t", kind="stable").groupby("bidder")["t"]:
        start = last = None
        count = 0
        for t in times.tolist():
            if start is not None and (t >= last + gap_ms or t >= start + max_ms):
                out.append((bidder, count, start, min(last + gap_ms, start + max_ms)))
                start = None
            if start is None:
                start, count = t, 0
            last, count = t, count + 1
        out.append((bidder, count, start, min(last + gap_ms, start + max_ms)))
    return [json_ready({"bidder": _py(b), "bid_count": n, "starttime": _seconds(s), "endtime": _seconds(e)})
            for b, n, s, e in out]


def q12(f: dict[str, pd.DataFrame]) -> list[Any]:
    b = f["bid"].assign(start=lambda d: _tumble(d["t"], 10_000))
    g = b.groupby(["bidder", "start"], as_index=False).size().rename(columns={"size": "bid_count"})
    g = g.assign(window_start=g["start"] // 1000, window_end=g["start"] // 1000 + 10)
    return _records(g, ["bidder", "bid_count", "window_start", "window_end"])


REFERENCES = {"q0": q0, "q1": q1, "q2": q2, "q3": q3, "q4": q4, "q5": q5, "q6": q6, "q7": q7, "q8": q8,
              "q11": q11, "q12": q12}


def comparable(query: str, rows: list[Any]) -> list[Any]:
    """``rows`` in the form the comparison of ``query`` uses: as they are (ordered queries), the last
    row per key sorted by key (changelogs), or sorted by their JSON text (multisets)."""
    if query in LAST_PER_KEY:
        key = LAST_PER_KEY[query]
        last = {r[key]: r for r in rows}
        return [last[k] for k in sorted(last)]
    if query in ORDERED:
        return list(rows)
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))
