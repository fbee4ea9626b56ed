"""B6 — does sbpy use more cores? The same work on ``local[1]`` and ``local[2]``, alternating.

Three workloads, each on a fresh Spark session per master (the session's cores are fixed at start):

- **B1** (``bench/b1_filter.py``): ``SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8``
  through a topology (file source → planned stateless query, native tier where it applies → file sink),
  next to the hand-written PySpark streaming job on the same session — its own gain from the second
  core is the yardstick. Each session warms both sides with one untimed run (over the input itself
  unless ``--warm-rows``), then times ``--timed`` runs of each, alternating: a new session's first
  topology run costs about twice the later ones (its Python workers, code generation, classes loaded
  and compiled anew), and a server's session runs for hours;
- **keyed MATCH_RECOGNIZE** (``bench/b5_match.py``): ``A B+ C`` with ``PARTITION BY`` over the ticker
  rows, the keyed plan (one group per bucket of partition keys, as many buckets as shuffle partitions),
  Spark's busy time;
- **tumble GROUP BY** (``bench/b4_windows.py``'s tumble 10 s query, ``count(*)``, ``sum(v)`` per ``k`` and
  window), Spark's busy time of three forms: sbpy's keyed window plan (ordered router, buckets of windows
  by ``k``), sbpy as it plans the query by default (the driver: one core by design) and the hand-written
  Spark ``window()`` aggregation over the same rows — its gain is the yardstick for keyed aggregation.

``--pin`` runs the ``local[1]`` sessions with the whole process tree (this process, the JVM PySpark
launched, its Python workers) on one CPU: unpinned, ``local[1]`` runs one task at a time but the JVM's
collector and JIT compiler and the driver's own work still use the second core, so "twice the cores" is
only what ``--pin`` compares. Prints each figure per master (medians), the gain ``local[1] time /
local[2] time`` and checks that both masters (and the forms of the window query) produced the same rows.

The machine has 2 cores: with anything else running, the second core is not free — read the load
noted per round.

``--cluster`` compares a Spark standalone cluster on 127.0.0.1 with one one-core worker against one with
two (``tests/e2e/cluster.py``'s cluster, started afresh for each session; executors run this interpreter):
the same workloads, the driver a client of the cluster as ``sbpy run`` is with ``spark.master:
spark://...``. With ``--pin`` the one-worker sessions' master, worker, executor and driver share one CPU.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))  # --cluster: cluster.py
# Spark's Python workers unpickle b5_match's stage factory by module name: let them import bench/
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).resolve().parent),
                                                        os.environ.get("PYTHONPATH", "")) if p)

import b1_filter  # noqa: E402
import b4_windows  # noqa: E402
import b5_match  # noqa: E402
import benchlib  # noqa: E402

MASTERS = ("local[1]", "local[2]")
CLUSTER = ("1 worker", "2 workers")  # ``--cluster``: a standalone cluster of one-core workers on 127.0.0.1


def _tag(master: str) -> str:
    """A file-name-safe short form of a label: the number of cores or workers."""
    return next(c for c in master if c.isdigit())


@contextlib.contextmanager
def running_master(master: str, tmp: Path, memory: str) -> Iterator[str]:
    """The Spark master URL of a label: ``local[n]`` itself; for a cluster label, a standalone cluster's
    (master + that many one-core workers, started by ``tests/e2e/cluster.py``) for the duration — inside
    any ``--pin`` of the round, so its JVMs and executors inherit the CPU set."""
    if master in MASTERS:
        yield master
        return
    from cluster import StandaloneCluster  # tests/e2e: the CI's cluster helper

    folder = Path(tempfile.mkdtemp(prefix="cluster-", dir=tmp))
    try:
        with StandaloneCluster(folder, cores=1, memory=memory, workers=int(_tag(master))) as cluster:
            yield cluster.url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def b1_session(master: str, url: str, src: Path, warm: Path, tmp: Path, expected: int, warm_expected: int,
               r: int, timed: int) -> tuple[list[float], list[float], list]:
    """``(sbpy seconds, reference seconds, sbpy rows)`` of ``timed`` alternating runs of each side on a fresh
    session with ``master``, after one untimed run of each over ``warm`` (the input itself by default: a
    server runs for hours; a new session's first run is not what it runs at)."""
    ctx = benchlib.server_context(tmp / f"data-{r}-{_tag(master)}", url, [])
    sbpy: list[float] = []
    ref: list[float] = []
    rows: list = []
    try:
        spark = benchlib.start_session(ctx)
        b1_filter.reference_streaming(spark, warm.parent, tmp / f"wr-{r}", tmp / f"wck-{r}")
        b1_filter.sbpy_topology(ctx, warm, tmp / f"ws-{r}.jsonl", warm_expected, 1800, f"b6w{r}")
        for name in (f"wr-{r}", f"ws-{r}.jsonl"):
            _remove(tmp / name)
        for i in range(timed):
            tag = f"{r}-{_tag(master)}-{i}"
            for side in (("sbpy", "ref") if i % 2 == 0 else ("ref", "sbpy")):
                if side == "ref":
                    ref.append(b1_filter.reference_streaming(spark, src.parent, tmp / f"r-{tag}",
                                                             tmp / f"ck-{tag}"))
                    _remove(tmp / f"r-{tag}")
                    continue
                out = tmp / f"s-{tag}.jsonl"
                res = b1_filter.sbpy_topology(ctx, src, out, expected, 1800, f"b6r{tag.replace('-', '_')}")
                sbpy.append(res["seconds"])
                if not rows:
                    rows = b1_filter.read_rows(out)
                _remove(out)
            print(f"  B1 {master}: sbpy ({res['tier']}) {sbpy[-1]:.2f} s, reference {ref[-1]:.2f} s; "
                  f"{benchlib.load_note()}")
        return sbpy, ref, rows
    finally:
        ctx.close()


def _remove(path: Path) -> None:
    """Remove a run's output (a Spark sink's folder, sbpy's sink file): the runs would fill the disk."""
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def mr_round(master: str, url: str, rows: list[dict[str, Any]],
             batch: int = 20_000) -> tuple[float, float, list]:
    """``(busy seconds, steady seconds, matches)`` of the keyed MATCH_RECOGNIZE with ``master``, ``batch``
    journal seqs per micro-batch; *steady*: the busy time of the batches after the first (which plans the
    query and starts its operators' Python workers once per query)."""
    (res,) = b5_match.through_spark(rows, url, False, [], batch, planned=False)
    steady = res["steady"][1]
    print(f"  keyed MATCH_RECOGNIZE {master}: {res['busy']:.2f} s busy, {steady:.2f} s after the first batch "
          f"({res['steady'][0]:,} rows); {benchlib.load_note()}")
    return res["busy"], steady, sorted(map(b5_match._key, res["matches"]))


# sbpy's keyed plan, sbpy's default (driver) plan, Spark's window()
WINDOW_SIDES = ("keyed", "driver", "spark")


def window_round(master: str, url: str, data: list[tuple[int, int, float]], tmp: Path,
                 r: int) -> dict[str, tuple[float, list]]:
    """Per side of ``WINDOW_SIDES``: ``(busy seconds, rows)`` of the tumble GROUP BY
    (``bench/b4_windows.py``'s query: ``count(*)``, ``sum(v)`` per ``k`` and window) on a fresh session
    with ``master`` — sbpy's keyed plan (the ordered router, then one bucket per shuffle partition), sbpy
    as it plans the query by default (the driver) and the hand-written Spark ``window()`` aggregation over
    the same rows as Parquet."""
    from sbpy.server.context import ServerContext

    folder = tmp / f"win-{r}-{_tag(master)}"
    ctx = ServerContext(data_dir=folder / "data", master=url)
    try:
        spark = ctx.spark()
        window = b4_windows._forms()["tumble 10 s"][1]
        b4_windows.write_parquet(folder / "parquet", data)
        b4_windows.write_parquet(folder / "parquet-warm", data[:10_000])
        out = {}
        for side in WINDOW_SIDES:
            if side == "spark":
                b4_windows.run_spark(spark, folder, "warm", window, folder / "parquet-warm")
                res = b4_windows.run_spark(spark, folder, "run", window, folder / "parquet")
            else:
                form = "tumble(src, 10 SECONDS)"
                b4_windows.run_ours(spark, folder, f"warm-{side}", form, data[:10_000], side)
                res = b4_windows.run_ours(spark, folder, f"run-{side}", form, data, side)
            out[side] = (res["busy"], sorted(res["rows"]))
            print(f"  tumble GROUP BY {master} ({side}): {res['busy']:.2f} s busy; {benchlib.load_note()}")
        return out
    finally:
        ctx.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="B1 input lines (0: skip B1)")
    ap.add_argument("--mr-rows", type=int, default=100_000, help="ticker rows for MATCH_RECOGNIZE (0: skip)")
    ap.add_argument("--mr-batch", type=int, default=20_000,
                    help="MATCH_RECOGNIZE: journal seqs per micro-batch (B5's 20k: several batches; the "
                         "server's cap is 1,000,000)")
    ap.add_argument("--window-rows", type=int, default=100_000, help="rows for the tumble GROUP BY (0: skip)")
    ap.add_argument("--window-keys", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2, help="sessions per master, the masters alternating")
    ap.add_argument("--timed", type=int, default=3,
                    help="B1: timed runs of each side per session, alternating")
    ap.add_argument("--warm-rows", type=int, default=0,
                    help="B1 warm-up lines per side and session (0: one run over the input itself): a new "
                         "session's first run costs about twice the later ones")
    ap.add_argument("--pin", action="store_true",
                    help="run the local[1] sessions with this process, the JVM and its Python workers on "
                         "one CPU (unpinned, the JVM's collector, compiler and driver use the second core "
                         "meanwhile)")
    ap.add_argument("--no-warm-session", dest="warm_session", action="store_false",
                    help="skip the untimed keyed MATCH_RECOGNIZE session before the timed rounds (the "
                         "process's first Spark session also pays for the driver's cold imports and files, "
                         "and it would be round 0's local[1])")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra Spark setting for every session of the run (repeatable), as sensorbee.yaml's "
                         "spark.conf (e.g. spark.python.daemon.module=pyspark.daemon: pyspark's own daemon)")
    ap.add_argument("--cluster", action="store_true",
                    help="instead of local[1] vs local[2]: a standalone cluster on 127.0.0.1 with one "
                         "one-core worker vs two (a fresh cluster per session; with --pin, the one-worker "
                         "cluster's JVMs, executor and this driver share one CPU)")
    ap.add_argument("--worker-memory", default="2g", help="--cluster: each worker's and executor's memory")
    a = ap.parse_args()
    masters = CLUSTER if a.cluster else MASTERS
    if a.cluster:
        from sbpy.server import context

        # the executors run this interpreter (sbpy installed); the driver binds loopback as the cluster
        context.DEFAULT_CONF.update({"spark.pyspark.python": sys.executable,
                                     "spark.executor.memory": a.worker_memory})
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    if a.conf:
        from sbpy.server import context

        context.DEFAULT_CONF.update(dict(c.split("=", 1) for c in a.conf))
        print(f"extra conf: {a.conf}")
    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b6-"))
    pinned = a.pin and len(benchlib.ALL_CPUS) > 1
    print(f"B6: {masters[0]} vs {masters[1]}, {a.rounds} alternating rounds; {masters[0]} "
          f"{'pinned to one CPU' if pinned else 'unpinned'}; {benchlib.load_note()}")
    try:
        src = tmp / "in" / "rows.jsonl"
        benchlib.write_jsonl(src, a.rows)
        warm, warm_expected = src, benchlib.expected_filter_count(a.rows)
        if a.warm_rows:
            warm = tmp / "warm" / "w.jsonl"
            benchlib.write_jsonl(warm, a.warm_rows)
            warm_expected = benchlib.expected_filter_count(a.warm_rows)
        expected = benchlib.expected_filter_count(a.rows)
        ticker = b5_match.ticker(a.mr_rows) if a.mr_rows else []
        sbpy: dict[str, list[float]] = {m: [] for m in masters}
        ref: dict[str, list[float]] = {m: [] for m in masters}
        mr: dict[str, list[float]] = {m: [] for m in masters}
        mr_steady: dict[str, list[float]] = {m: [] for m in masters}
        win: dict[str, dict[str, list[float]]] = {side: {m: [] for m in masters} for side in WINDOW_SIDES}
        window_data = b4_windows.rows_of(a.window_rows, a.window_keys) if a.window_rows else []
        outputs: dict[str, list] = {}
        if ticker and a.warm_session:  # the process's first Spark session also pays for cold imports and files
            print("  warm-up session (not timed):")
            with running_master(masters[1], tmp, a.worker_memory) as url:
                mr_round(masters[1], url, ticker, a.mr_batch)

        def run_round(master: str, url: str, r: int) -> None:
            if a.rows:
                times, t_ref, rows = b1_session(master, url, src, warm, tmp, expected, warm_expected, r,
                                                a.timed)
                sbpy[master].extend(times)
                ref[master].extend(t_ref)
                outputs.setdefault(f"b1 {master}", rows)
            if ticker:
                busy, steady, matches = mr_round(master, url, ticker, a.mr_batch)
                mr[master].append(busy)
                mr_steady[master].append(steady)
                outputs.setdefault(f"mr {master}", matches)
            if window_data:
                for side, (busy, rows) in window_round(master, url, window_data, tmp, r).items():
                    win[side][master].append(busy)
                    outputs.setdefault(f"win {side} {master}", rows)

        for r in range(a.rounds):
            for master in (masters if r % 2 == 0 else masters[::-1]):
                if pinned:
                    benchlib.pin_process_tree([min(benchlib.ALL_CPUS)] if master == masters[0] else None)
                with running_master(master, tmp, a.worker_memory) as url:
                    run_round(master, url, r)
        if pinned:
            benchlib.pin_process_tree(None)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    def med(xs: list[float]) -> float:
        return statistics.median(xs) if xs else float("nan")

    one, two = masters
    table = [("B1 sbpy topology", med(sbpy[one]), med(sbpy[two])),
             ("B1 PySpark streaming reference", med(ref[one]), med(ref[two]))] if a.rows else []
    if ticker:
        table.append(("keyed MATCH_RECOGNIZE (busy)", med(mr[one]), med(mr[two])))
        table.append(("keyed MATCH_RECOGNIZE (busy after the first batch)", med(mr_steady[one]),
                      med(mr_steady[two])))
    if a.window_rows:
        names = {"keyed": "tumble GROUP BY, sbpy keyed plan (busy)",
                 "driver": "tumble GROUP BY, sbpy default plan: driver (busy)",
                 "spark": "tumble GROUP BY, Spark window() reference (busy)"}
        table += [(names[side], med(win[side][one]), med(win[side][two]))
                  for side in WINDOW_SIDES]
    print()
    print(f"medians; B1: {a.timed} timed runs of each side per session after a warm-up run")
    print(benchlib.table(("workload", f"{one} s", f"{two} s", "gain"),
                         [(n, t1, t2, t1 / t2) for n, t1, t2 in table]))
    same_b1 = not a.rows or outputs[f"b1 {one}"] == outputs[f"b1 {two}"]
    same_mr = not ticker or outputs[f"mr {one}"] == outputs[f"mr {two}"]
    same_win = not a.window_rows or all(outputs[f"win {side} {m}"] == outputs[f"win keyed {one}"]
                                        for side in WINDOW_SIDES if side != "spark" for m in masters)
    spark_win = not a.window_rows or all(outputs[f"win spark {m}"] == outputs[f"win keyed {one}"]
                                         for m in masters)
    print(f"\nrow checks: B1 {'same' if same_b1 else 'DIFFERENT'} on both masters"
          + ("" if not ticker else f", MATCH_RECOGNIZE {'same' if same_mr else 'DIFFERENT'}")
          + ("" if not a.window_rows else
             f", tumble keyed/driver {'same' if same_win else 'DIFFERENT'} on both masters, "
             f"Spark's window() rows {'the same' if spark_win else 'DIFFERENT'}"))


if __name__ == "__main__":
    main()
