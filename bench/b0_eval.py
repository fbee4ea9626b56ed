"""B0 — EVAL over REST and per-expression evaluation cost (issue: language core).

Prints, does not assert:
  * EVAL round trip through a real server on a loopback port (p50/p99, ms);
  * the per-tuple cost of SensorBee's filter statements' expressions compiled by the evaluator,
    as a ratio against a hand-written Python lambda doing the same work in the same process.

Run: python bench/b0_eval.py [--n 200000]
"""
from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sbpy.bql.eval import Env, Scope, compile_expr  # noqa: E402
from sbpy.bql.parser import parse_expression  # noqa: E402
from sbpy.bql.runtime.processor import Tuple  # noqa: E402

# (BQL expression, an equivalent hand-written Python function over the tuple's data)
CASES = [
    ("price < 8", lambda d: d["price"] < 8),
    ("price < 8 AND id % 2 = 1", lambda d: d["price"] < 8 and d["id"] % 2 == 1),
    ('name = "x" OR price * 2 > 10', lambda d: d["name"] == "x" or d["price"] * 2 > 10),
    ("price::int + 1", lambda d: int(d["price"]) + 1),
]


def per_expression(n: int) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    rows = [Tuple({"id": i, "price": (i % 16) * 0.75, "name": "x" if i % 3 else "y"}, now) for i in range(1000)]
    envs = [Env({"src": t}) for t in rows]
    scope = Scope(("src",))
    print(f"{'expression':34} {'bql µs':>8} {'python µs':>10} {'ratio':>6}")
    for text, ref in CASES:
        fn = compile_expr(parse_expression(text), scope)
        reps = max(1, n // len(envs))
        t0 = time.perf_counter()
        for _ in range(reps):
            for env in envs:
                fn(env)
        bql = (time.perf_counter() - t0) / (reps * len(envs))
        t0 = time.perf_counter()
        for _ in range(reps):
            for t in rows:
                ref(t.data)
        py = (time.perf_counter() - t0) / (reps * len(rows))
        print(f"{text:34} {bql * 1e6:8.3f} {py * 1e6:10.3f} {bql / py:6.2f}")


def rest_round_trip(n: int) -> None:
    from server_harness import start_server  # the tests' loopback server starter

    from sbpy.server.config import config_from_dict

    with tempfile.TemporaryDirectory() as tmp:
        srv = start_server(config_from_dict({}), Path(tmp))
        try:
            with srv.client() as c:
                c.post("/topologies", json={"name": "bench"})
                lat = []
                for _ in range(n):
                    t0 = time.perf_counter()
                    r = c.post("/topologies/bench/queries", json={"queries": "EVAL 1 + 2 * 3;"})
                    lat.append(time.perf_counter() - t0)
                    assert r.json() == {"result": 7}
                lat.sort()
                print(f"EVAL over REST: n={n} p50 {statistics.median(lat) * 1e3:.2f} ms "
                      f"p99 {lat[int(len(lat) * 0.99) - 1] * 1e3:.2f} ms")
        finally:
            srv.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--rest", type=int, default=300)
    a = ap.parse_args()
    per_expression(a.n)
    rest_round_trip(a.rest)


if __name__ == "__main__":
    main()
