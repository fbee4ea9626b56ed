"""Small helpers shared by the bench scripts (no Spark import at module level).

Every script puts ``bench/`` on ``sys.path`` (running ``python bench/bX.py`` does it already), so
``import benchlib`` works from the scripts and from tests/bench.
"""
from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by nearest rank on the sorted list."""
    if not values:
        raise ValueError("no values")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def summary_ms(values_s: Sequence[float]) -> dict[str, float]:
    """p50 / p99 / min / max in milliseconds of durations given in seconds."""
    ms = [v * 1000 for v in values_s]
    return {"p50": statistics.median(ms), "p99": percentile(ms, 0.99), "min": min(ms), "max": max(ms)}


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A plain fixed-width table (numbers right-aligned)."""
    cells = [[str(h) for h in header]] + [[_fmt(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for k, r in enumerate(cells):
        parts = []
        for i, c in enumerate(r):
            parts.append(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]))
        lines.append("  ".join(parts))
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        return f"{v:.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def price_of(i: int) -> float:
    """The generated price of row ``i``: 0.0 .. 11.25 in steps of 0.75 (11 of 16 values are < 8)."""
    return ((i * 7) % 16) * 0.75


def row_of(i: int) -> dict[str, Any]:
    """The generated tuple ``i`` (about 80 bytes of JSON, like spark-facts.md's 82 B lines)."""
    return {"id": i, "price": price_of(i), "name": f"sensor-{i % 100}", "k": i % 10, "unit": "EUR",
            "note": "lorem ipsum"}


def write_jsonl(path: str | os.PathLike[str], n: int, chunk: int = 100_000) -> int:
    """Write ``n`` generated rows as JSON lines; returns the file size in bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for start in range(0, n, chunk):
            f.write(b"".join(orjson.dumps(row_of(i)) + b"\n" for i in range(start, min(n, start + chunk))))
    return path.stat().st_size


def expected_filter_count(n: int) -> int:
    """How many of rows 0..n-1 have ``price < 8``."""
    return sum(1 for i in range(n) if price_of(i) < 8)


def server_context(data_dir: str | os.PathLike[str], master: str, conf: Iterable[str] = ()) -> Any:
    """A ``ServerContext`` for a bench run; ``conf`` holds ``--conf KEY=VALUE`` arguments."""
    from sbpy.server.context import ServerContext

    return ServerContext(data_dir=data_dir, master=master, conf=dict(c.split("=", 1) for c in conf))


def start_session(ctx: Any) -> Any:
    """Start ``ctx``'s SparkSession (its warm-up included), print how long it took, return the session."""
    t0 = time.perf_counter()
    ctx.warm_up().join()
    spark = ctx.spark()
    print(f"session ready in {time.perf_counter() - t0:.1f} s")
    return spark


def run_to_end(spark: Any, spec: Any) -> tuple[float, list[dict[str, Any]]]:
    """Start the query ``spec`` (planned or fused), process all available input and stop it. Returns the wall time
    from the start and Spark's progress entries of the batches that had input rows (counted in journal
    seqs)."""
    from sbpy.bql.spark.query import start_query

    t0 = time.perf_counter()
    if spec.plan is not None:  # planned: the execution the plan names
        from sbpy.bql.spark.compile import start_planned

        handle = start_planned(spark, spec)
    else:
        handle = start_query(spark, spec)
    try:
        handle.process_all_available()
        wall = time.perf_counter() - t0
        progress = [p for p in handle.recent_progress if p.get("numInputRows")]
    finally:
        handle.stop()
    return wall, progress


def trigger_seconds(progress: Iterable[dict[str, Any]]) -> float:
    """The summed ``triggerExecution`` time of progress entries, in seconds."""
    return sum(p["durationMs"].get("triggerExecution", 0) for p in progress) / 1000


def load_note() -> str:
    """The 1-minute load average and CPU count, for the printed header."""
    try:
        one, five, _ = os.getloadavg()
    except OSError:
        return "load n/a"
    return f"load avg {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} CPUs"


ALL_CPUS = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it (``/proc``'s parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def pin_process_tree(cpus: Iterable[int] | None) -> int:
    """Restrict every thread of this process and of the processes below it (the JVM PySpark launched, its
    Python workers) to ``cpus`` (None: every CPU this process started with); threads made later inherit
    their creator's set. So ``local[1]`` can mean one core: unpinned, the JVM's collector, its compiler
    and the driver run on the other core meanwhile. Returns how many threads were set (0 where the
    system has no affinity calls)."""
    if not ALL_CPUS:
        return 0
    wanted = set(cpus) if cpus is not None else set(ALL_CPUS)
    n = 0
    for pid in _descendants(os.getpid()):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                os.sched_setaffinity(int(tid), wanted)
                n += 1
            except OSError:  # the thread ended meanwhile
                continue
    return n
