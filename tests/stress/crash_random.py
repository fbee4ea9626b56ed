"""Randomized kill -9 stress run (issue 12): repeated ``tests/e2e/crash_harness.CrashRun`` runs until
``--kills`` kills have been tried (of the server, or of its Spark JVM: point ``jvm``), then a table per
case of kills tried / survived / timed out and output rows lost / late / duplicated / wrong (window
values), and one of the kills per point, for README's Reliability section. A case *timed out* when the
run's deadline passed before all its outputs arrived while what had arrived was a correct prefix (no
duplicate, no wrong value, in order): its missing outputs count as *late*, not lost (on a loaded machine
its queries may still be restarting).

    .venv/bin/python tests/stress/crash_random.py --kills 30 --seed 7 [--per-run 3] [--n 300] [--points replan]

Run ``i`` uses seed ``S + i`` (printed with each run); ``CrashRun(root, seed=...)`` replays its random
choices. A kill counts as survived for a case when that run's outputs of the case were all exactly once.
Every server is killed at the end of its run; the work folders are removed unless ``--keep``.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from crash_harness import CASES, POINTS, CrashRun, summary


def table(rows: dict[str, dict[str, int]]) -> str:
    head = (f"{'case':<10} {'kills tried':>11} {'survived':>9} {'timed out':>9} {'lost':>6} {'late':>6} "
            f"{'duplicated':>10} {'wrong':>6}")
    out = [head, "-" * len(head)]
    keys = ("tried", "survived", "timed_out", "lost", "late", "duplicated", "wrong")
    for case, r in [*rows.items(), ("all", {k: sum(r[k] for r in rows.values()) for k in keys})]:
        out.append(f"{case:<10} {r['tried']:>11} {r['survived']:>9} {r['timed_out']:>9} {r['lost']:>6} "
                   f"{r['late']:>6} {r['duplicated']:>10} {r['wrong']:>6}")
    return "\n".join(out)


def point_table(points: dict[str, list[int]]) -> str:
    """Kills per aimed point: tried, and in runs where every case was exactly once."""
    head = f"{'point':<14} {'kills':>6} {'in clean runs':>14}"
    out = [head, "-" * len(head)]
    for p, (tried, clean) in points.items():
        out.append(f"{p:<14} {tried:>6} {clean:>14}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=12, help="kills to try in total (each hits every case)")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--per-run", type=int, default=3, help="kills per server run")
    ap.add_argument("--n", type=int, default=300, help="input tuples per case")
    ap.add_argument("--interval", type=float, default=0.05, help="seconds between input tuples")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ",".join(CASES))
    ap.add_argument("--points", default=",".join(POINTS), help="comma-separated kill points: " + ",".join(POINTS))
    ap.add_argument("--keep", action="store_true", help="keep the work folders")
    args = ap.parse_args(argv)
    cases = tuple(c for c in args.cases.split(",") if c)
    points = tuple(p for p in args.points.split(",") if p)
    rows = {c: dict.fromkeys(("tried", "survived", "timed_out", "lost", "late", "duplicated", "wrong"), 0)
            for c in cases}
    print(f"crash_random: --kills {args.kills} --seed {args.seed} --per-run {args.per_run} --n {args.n}")
    by_point = {p: [0, 0] for p in points}
    done, run, failed = 0, 0, []
    t0 = time.monotonic()
    while done < args.kills:
        kills = min(args.per_run, args.kills - done)
        root = Path(tempfile.mkdtemp(prefix=f"sbpy-crash-{args.seed + run}-"))
        crash = CrashRun(root, seed=args.seed + run, kills=kills, n=args.n, interval=args.interval,
                         cases=cases, points=points)
        try:
            results = crash.run()
        except Exception as e:  # noqa: BLE001 - a run that could not even finish is a failure of every case
            print(f"run {run} (seed {args.seed + run}) failed: {e!r}; folder {root}")
            failed.append(args.seed + run)
            for c in cases:
                rows[c]["tried"] += kills
            done, run = done + kills, run + 1
            continue
        print(summary(results), flush=True)
        clean = all(r.ok for r in results.values())
        for p in crash.aimed:
            by_point[p][0] += 1
            by_point[p][1] += clean
        for c, r in results.items():
            rows[c]["tried"] += len(r.kills)
            rows[c]["survived"] += len(r.kills) if r.ok else 0
            rows[c]["timed_out"] += len(r.kills) if r.undelivered else 0  # a correct prefix, the rest late
            lost = sum(s.lost for s in r.sinks.values())
            rows[c]["late" if r.undelivered else "lost"] += lost
            for k in ("duplicated", "wrong"):
                rows[c][k] += sum(getattr(s, k) for s in r.sinks.values())
        if all(r.ok for r in results.values()) and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif not all(r.ok for r in results.values()):
            failed.append(args.seed + run)
            print(f"  kept {root}")
        done, run = done + kills, run + 1
    print(f"\n{run} runs, {done} kills per case, {time.monotonic() - t0:.0f} s"
          + (f"; failing seeds: {failed}" if failed else ""))
    print(table(rows))
    print()
    print(point_table(by_point))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
