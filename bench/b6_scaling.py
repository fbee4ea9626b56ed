"""B6 — does sbpy use more cores? The same work on ``local[1]`` and ``local[2]``, alternating.

Two workloads, each timed on a fresh Spark session per master (the session's cores are fixed at start):

- **B1** (``bench/b1_filter.py``): ``SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8``
  through a topology (file source → planned stateless query, native tier where it applies → file sink),
  next to the hand-written PySpark streaming job on the same session — its own gain from the second
  core is the yardstick;
- **keyed MATCH_RECOGNIZE** (``bench/b5_match.py``): ``A B+ C`` with ``PARTITION BY`` over the ticker
  rows, the keyed plan (one group per bucket of partition keys, as many buckets as shuffle partitions),
  Spark's busy time;
- **keyed tumble GROUP BY** (``bench/b4_windows.py``'s tumble 10 s query, ``count(*)``, ``sum(v)`` per
  ``k`` and window): the keyed window plan (ordered router, buckets of windows by ``k``), Spark's busy time.

Prints each figure per master (median over rounds), the gain ``local[1] time / local[2] time`` and checks
that both masters produced the same rows. Each B1 round warms both sides on ``--warm-rows`` lines first:
a new session loads the native tier's jar in a new class loader, so without a warm-up of some size sbpy's
JVM functions run interpreted for most of the timed run while Spark's own classes, compiled in earlier
rounds of the same JVM, do not. The machine has 2 cores: with anything else running, the
second core is not free — read the load noted per round.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Spark's Python workers unpickle b5_match's stage factory by module name: let them import bench/
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent),
                                                        os.environ.get("PYTHONPATH", "")) if p)

import b1_filter  # noqa: E402
import b4_windows  # noqa: E402
import b5_match  # noqa: E402
import benchlib  # noqa: E402

MASTERS = ("local[1]", "local[2]")


def b1_round(master: str, src: Path, warm: Path, tmp: Path, expected: int, warm_expected: int,
             r: int) -> tuple[float, float, list]:
    """``(sbpy seconds, reference seconds, sbpy rows)`` on a fresh session with ``master``."""
    ctx = benchlib.server_context(tmp / f"data-{r}-{master[6]}", master, [])
    try:
        spark = benchlib.start_session(ctx)
        b1_filter.reference_streaming(spark, warm.parent, tmp / f"wr-{r}", tmp / f"wck-{r}")
        b1_filter.sbpy_topology(ctx, warm, tmp / f"ws-{r}.jsonl", warm_expected, 600, f"b6w{r}")
        out = tmp / f"s-{r}-{master[6]}.jsonl"
        res = b1_filter.sbpy_topology(ctx, src, out, expected, 1800, f"b6r{r}")
        ref = b1_filter.reference_streaming(spark, src.parent, tmp / f"r-{r}-{master[6]}", tmp / f"ck-{r}-{master[6]}")
        rows = b1_filter.read_rows(out)
        print(f"  B1 {master}: sbpy ({res['tier']}) {res['seconds']:.2f} s, reference {ref:.2f} s; "
              f"{benchlib.load_note()}")
        return res["seconds"], ref, rows
    finally:
        ctx.close()


def mr_round(master: str, rows: list[dict[str, Any]]) -> tuple[float, list]:
    """``(busy seconds, matches)`` of the keyed MATCH_RECOGNIZE with ``master``."""
    (res,) = b5_match.through_spark(rows, master, False, [])
    print(f"  keyed MATCH_RECOGNIZE {master}: {res['busy']:.2f} s busy; {benchlib.load_note()}")
    return res["busy"], sorted(map(b5_match._key, res["matches"]))


def window_round(master: str, data: list[tuple[int, int, float]], tmp: Path, r: int) -> tuple[float, list]:
    """``(busy seconds, rows)`` of the keyed tumble GROUP BY (``bench/b4_windows.py``'s query, keyed by
    ``k``: the ordered router, then one bucket per shuffle partition) on a fresh session with ``master``."""
    from sbpy.server.context import ServerContext

    folder = tmp / f"win-{r}-{master[6]}"
    ctx = ServerContext(data_dir=folder / "data", master=master)
    try:
        spark = ctx.spark()
        b4_windows.run_ours(spark, folder, "warm", "tumble(src, 10 SECONDS)", data[:10_000], "keyed")
        res = b4_windows.run_ours(spark, folder, "run", "tumble(src, 10 SECONDS)", data, "keyed")
        print(f"  keyed tumble GROUP BY {master} ({res['execution']}): {res['busy']:.2f} s busy; "
              f"{benchlib.load_note()}")
        return res["busy"], sorted(res["rows"])
    finally:
        ctx.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="B1 input lines (0: skip B1)")
    ap.add_argument("--mr-rows", type=int, default=100_000, help="ticker rows for MATCH_RECOGNIZE (0: skip)")
    ap.add_argument("--window-rows", type=int, default=100_000, help="rows for the keyed tumble GROUP BY (0: skip)")
    ap.add_argument("--window-keys", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warm-rows", type=int, default=400_000,
                    help="B1 warm-up lines per side and session: each session loads the native jar's classes "
                         "afresh, so its JIT starts cold (Spark's own classes stay compiled across sessions)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b6-"))
    print(f"B6: local[1] vs local[2], {a.rounds} alternating rounds; {benchlib.load_note()}")
    try:
        src = tmp / "in" / "rows.jsonl"
        benchlib.write_jsonl(src, a.rows)
        warm = tmp / "warm" / "w.jsonl"
        benchlib.write_jsonl(warm, a.warm_rows)
        expected, warm_expected = benchlib.expected_filter_count(a.rows), benchlib.expected_filter_count(a.warm_rows)
        ticker = b5_match.ticker(a.mr_rows) if a.mr_rows else []
        sbpy: dict[str, list[float]] = {m: [] for m in MASTERS}
        ref: dict[str, list[float]] = {m: [] for m in MASTERS}
        mr: dict[str, list[float]] = {m: [] for m in MASTERS}
        win: dict[str, list[float]] = {m: [] for m in MASTERS}
        window_data = b4_windows.rows_of(a.window_rows, a.window_keys) if a.window_rows else []
        outputs: dict[str, list] = {}
        for r in range(a.rounds):
            for master in (MASTERS if r % 2 == 0 else MASTERS[::-1]):
                if a.rows:
                    t, t_ref, rows = b1_round(master, src, warm, tmp, expected, warm_expected, r)
                    sbpy[master].append(t)
                    ref[master].append(t_ref)
                    outputs.setdefault(f"b1 {master}", rows)
                if ticker:
                    busy, matches = mr_round(master, ticker)
                    mr[master].append(busy)
                    outputs.setdefault(f"mr {master}", matches)
                if window_data:
                    busy, rows = window_round(master, window_data, tmp, r)
                    win[master].append(busy)
                    outputs.setdefault(f"win {master}", rows)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs: list[float]) -> float:
        return statistics.median(xs) if xs else float("nan")

    table = [("B1 sbpy topology", med(sbpy["local[1]"]), med(sbpy["local[2]"])),
             ("B1 PySpark streaming reference", med(ref["local[1]"]), med(ref["local[2]"]))] if a.rows else []
    if ticker:
        table.append(("keyed MATCH_RECOGNIZE (busy)", med(mr["local[1]"]), med(mr["local[2]"])))
    if a.window_rows:
        table.append(("keyed tumble GROUP BY (busy)", med(win["local[1]"]), med(win["local[2]"])))
    print()
    print(benchlib.table(("workload", "local[1] s", "local[2] s", "gain"),
                         [(n, one, two, one / two) for n, one, two in table]))
    same_b1 = not a.rows or outputs["b1 local[1]"] == outputs["b1 local[2]"]
    same_mr = not ticker or outputs["mr local[1]"] == outputs["mr local[2]"]
    same_win = not a.window_rows or outputs["win local[1]"] == outputs["win local[2]"]
    print(f"\nrow checks: B1 {'same' if same_b1 else 'DIFFERENT'} on both masters"
          + ("" if not ticker else f", MATCH_RECOGNIZE {'same' if same_mr else 'DIFFERENT'}")
          + ("" if not a.window_rows else f", keyed tumble {'same' if same_win else 'DIFFERENT'}"))


if __name__ == "__main__":
    main()
