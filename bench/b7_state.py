"""B7 — the fused operator's per-batch cost with a large window: snapshot layout vs logged layout.

One BQL stage ``SELECT RSTREAM count(*) AS c, sum(x) AS s FROM src [RANGE --window TUPLES]``. The first
micro-batch fills the window (``--window`` tuples); then ``--batches`` micro-batches of ``--batch`` tuples
are appended one at a time (each is one micro-batch). Per batch: Spark's ``triggerExecution`` and the
state operator's progress metrics. Rounds alternate the two layouts (``SBPY_FUSED_STATE``) in one session;
the table gives medians over the steady batches of all rounds.

Run: ``.venv/bin/python bench/b7_state.py [--window 200000] [--batch 1000] [--batches 15] [--rounds 2]``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

LAYOUTS = ("snapshot", "logged-v1")


def _append(journal_dir: Path, start: int, n: int) -> int:
    """Append tuples ``{"x": seq}`` with seqs ``start+1 .. start+n`` to node ``src`` in one write."""
    from sbpy.bql.spark import journal_format as jf

    path = jf.node_log_path(journal_dir, "src")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(jf.encode_entry(s, s * 1000, {"x": s}) + "\n"
                        for s in range(start + 1, start + n + 1)))
    jf.write_head(journal_dir, start + n)
    return start + n


def one_run(spark, layout: str, args, work: Path) -> tuple[list[dict], list]:
    from sbpy.bql.spark.operator import StageSpec
    from sbpy.bql.spark.query import QuerySpec, start_query

    os.environ["SBPY_FUSED_STATE"] = "snapshot" if layout == "snapshot" else "logged"
    shutil.rmtree(work, ignore_errors=True)
    jdir = work / "journal"
    outs: list = []  # per batch: its out rows' count and last data

    def on_batch(bid: int, rows: list[dict]) -> None:
        data = [r["data"] for r in rows if r["kind"] == "out"]
        outs.append((bid, len(data), data[-1:]))
    stage = StageSpec("s", f"SELECT RSTREAM count(*) AS c, sum(x) AS s FROM src [RANGE {args.window} TUPLES]",
                      ("src",))
    spec = QuerySpec(query_id=f"b7.{layout}.{time.monotonic_ns()}", journal_dir=jdir, inputs=("src",),
                     stages=[stage], checkpoint_dir=work / "ck", topology="b7",
                     on_batch=on_batch)
    seq = _append(jdir, 0, args.window)
    handle = start_query(spark, spec)
    try:
        handle.process_all_available()
        for _ in range(args.batches):
            seq = _append(jdir, seq, args.batch)
            handle.process_all_available()
        progress = [p for p in handle._query.recentProgress if p.get("numInputRows")]
    finally:
        handle.stop()
    return progress[1:], outs  # the window-filling batch excluded from the timings


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--window", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=1_000)
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="b7-"))
    ctx = benchlib.server_context(base / "data", args.master)
    spark = benchlib.start_session(ctx)
    print(benchlib.load_note())
    per: dict[str, list[dict]] = {lay: [] for lay in LAYOUTS}
    outputs: dict[str, list] = {}
    try:
        for r in range(args.rounds):
            for layout in LAYOUTS if r % 2 == 0 else reversed(LAYOUTS):
                progress, outs = one_run(spark, layout, args, base / layout)
                per[layout].extend(progress)
                outputs.setdefault(layout, outs)
                if outs != outputs[layout]:
                    print(f"round {r} {layout}: outputs differ from its first round")
                print(f"round {r} {layout}: {len(progress)} batches, median trigger "
                      f"{statistics.median(p['durationMs']['triggerExecution'] for p in progress):.0f} ms "
                      f"({benchlib.load_note()})")
        rows = []
        for layout, progress in per.items():
            ops = [p["stateOperators"][0] for p in progress if p.get("stateOperators")]
            custom = [o.get("customMetrics", {}) for o in ops]

            def med(values):
                values = [v for v in values if v is not None]
                return statistics.median(values) if values else "n/a"

            rows.append((layout, len(progress), med(p["durationMs"]["triggerExecution"] for p in progress),
                         med(p["durationMs"].get("addBatch") for p in progress),
                         med(o.get("numRowsUpdated") for o in ops),
                         med(c.get("rocksdbPutLatency") for c in custom),
                         med(o.get("commitTimeMs") for o in ops),
                         med(c.get("rocksdbCommitCheckpointLatency") for c in custom),
                         med(o.get("memoryUsedBytes") for o in ops)))
        print(benchlib.table(("layout", "batches", "trigger ms", "addBatch ms", "rows updated", "put ms",
                              "commit ms", "ckpt ms", "state memory B"), rows))
        same = outputs[LAYOUTS[0]] == outputs[LAYOUTS[1]]
        print(f"same outputs in both layouts (per batch: count, last row): {'yes' if same else 'NO'}")
        print(benchlib.load_note())
    finally:
        ctx.close()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
