"""B3 — per-tuple cost (µs) of SensorBee-style benchmark statements in the per-tuple kernel.

Each statement is compiled by ``build_processor`` (the incremental kernel where it applies) and fed
pre-built tuples in-process (no Spark, no JSON). The yardstick is a hand-written Python loop doing the
same work in the same process with the same output (a deque window, a ``Counter`` multiset for the
ISTREAM difference, incremental group counters) — the best one would write by hand, not a literal
re-evaluation of the relation. Both run as one batch with CPython's cyclic collector paused, as every
host of the kernel runs a batch (``gc_pause``: the driver, the Spark operators, the keyed buckets); the
same runs with the collector enabled get their own columns. The reference kernel (``SelectProcessor``,
forced with ``ProcessorContext(kernel="reference")``) gets its own column, over fewer tuples where it costs
milliseconds per tuple. Every run checks that both kernels and the hand-written loop emitted the same
multiset of rows.

With ``--spark N`` (default 200000; 0 skips it) the filter, the ISTREAM ``[RANGE 50 TUPLES]`` and the
GROUP BY statements also run through Spark as the server runs them — the planner's execution
(``plan_query`` → ``start_planned``: the filter ``stateless``, the others ``driver``) over N tuples of a
journal written as a Python source writes it, in micro-batches of 50,000 —; their µs/tuple is Spark's busy
time (sum of ``triggerExecution``) over N, the first batch (query start-up) included; the batches' own
times are printed as they run.

``--floor`` prints what the ``Processor`` contract alone costs (a ``StepResult`` and an output ``Tuple``
per row, nothing computed) next to the filter's and GROUP BY's hand loops: the bound under which no
kernel can go. ``--ops`` prints instead the Python bytecodes and calls per tuple of each statement and of its hand
loop (``sys.settrace`` with opcode events, 200 tuples after 100 to fill the window): deterministic
figures to read next to the timings on a loaded machine.

Run: ``.venv/bin/python bench/b3_per_tuple.py [--n 100000] [--spark 200000] [--rounds 3] [--only GROUP,join]
[--ops | --floor]``. Prints a table.
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import sys
import time
from collections import Counter, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson  # noqa: E402

import benchlib  # noqa: E402

START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
STEP = dt.timedelta(milliseconds=10)  # 100 tuples/s: [RANGE 5 SECONDS] holds 501 tuples

Item = tuple[str, dict[str, Any], dt.datetime]  # (input name, data, timestamp)


# ---------------------------------------------------------------- inputs


def single_input(n: int) -> list[Item]:
    return [("src", benchlib.row_of(i), START + i * STEP) for i in range(n)]


def join_input(n: int) -> list[Item]:
    """Alternating s1/s2 tuples; ``k`` in 0..3 so a new tuple matches ~1.25 of the other window's 5."""
    out: list[Item] = []
    for i in range(n):
        j = i // 2
        if i % 2 == 0:
            out.append(("s1", {"id": j, "k": j % 4}, START + i * STEP))
        else:
            out.append(("s2", {"id": j, "k": (j * 3) % 4}, START + i * STEP))
    return out


def join_runs_input(n: int, run: int = 50) -> list[Item]:
    """``join_input``'s rows, the inputs taking turns in runs of ``run`` tuples (two sources delivering
    blocks) instead of one by one."""
    out: list[Item] = []
    for i in range(n):
        name = "s1" if (i // run) % 2 == 0 else "s2"
        out.append((name, {"id": i, "k": i % 4 if name == "s1" else (i * 3) % 4}, START + i * STEP))
    return out


# ---------------------------------------------------------------- hand-written references


class IStream:
    """ISTREAM over a relation kept as a multiset of row keys: emit what the step added (max(0, new-old))."""

    def __init__(self) -> None:
        self.rel: Counter = Counter()

    def step(self, added: list[tuple], removed: list[tuple]) -> list[tuple]:
        delta = Counter(added)
        delta.subtract(removed)
        out = []
        for key, d in delta.items():
            if d > 0:
                out.extend([key] * d)
        self.rel.update(added)
        self.rel.subtract(removed)
        return out


def ref_filter(items: list[Item]) -> list[dict]:
    out = []
    for _, d, _ in items:
        if d["price"] < 8:
            out.append({"id": d["id"], "price": d["price"]})
    return out


def ref_filter_arithmetic(items: list[Item]) -> list[dict]:
    out = []
    for _, d, _ in items:
        price = d["price"]
        if price + 1 < 8:
            out.append({"id": d["id"], "p": price * 1.1})
    return out


def ref_istream_tuples(size: int) -> Callable[[list[Item]], list[dict]]:
    def run(items: list[Item]) -> list[dict]:
        win: deque = deque()
        ist = IStream()
        out = []
        for _, d, _ in items:
            row = (d["id"], d["price"])
            win.append(row)
            removed = [win.popleft()] if len(win) > size else []
            for r in ist.step([row], removed):
                out.append({"id": r[0], "price": r[1]})
        return out

    return run


def ref_istream_seconds(seconds: float) -> Callable[[list[Item]], list[dict]]:
    span = dt.timedelta(seconds=seconds)

    def run(items: list[Item]) -> list[dict]:
        win: deque = deque()
        ist = IStream()
        out = []
        for _, d, ts in items:
            row = (d["id"], d["price"])
            win.append((ts, row))
            low = ts - span
            removed = []
            while win[0][0] < low:
                removed.append(win.popleft()[1])
            for r in ist.step([row], removed):
                out.append({"id": r[0], "price": r[1]})
        return out

    return run


def ref_group_by(size: int) -> Callable[[list[Item]], list[dict]]:
    """Incremental group counters; each group's output map is made when the group changes and kept, and
    every tuple emits the kept maps (an unchanged group's map is not built again: the kernel emits the
    maps it holds, ``incremental.relation.emitted``, and so does this loop). ``ref_group_by_fresh`` builds
    every map anew each tuple."""
    def run(items: list[Item]) -> list[dict]:
        win: deque = deque()
        count: dict[Any, int] = {}
        total: dict[Any, float] = {}
        rows: dict[Any, dict] = {}
        out: list[dict] = []
        for _, d, _ in items:
            k, p = d["k"], d["price"]
            win.append((k, p))
            c = count[k] = count.get(k, 0) + 1
            t = total[k] = total.get(k, 0) + p
            rows[k] = {"k": k, "n": c, "total": t}
            if len(win) > size:
                ok, op = win.popleft()
                c = count[ok] = count[ok] - 1
                if c:
                    t = total[ok] = total[ok] - op
                    rows[ok] = {"k": ok, "n": c, "total": t}
                else:
                    del count[ok], total[ok], rows[ok]
            out += rows.values()
        return out

    return run


def ref_group_by_fresh(size: int) -> Callable[[list[Item]], list[dict]]:
    """``ref_group_by`` building every group's output map anew each tuple (the loop B3 measured before
    session 31)."""
    def run(items: list[Item]) -> list[dict]:
        win: deque = deque()
        count: dict[Any, int] = {}
        total: dict[Any, float] = {}
        out = []
        for _, d, _ in items:
            k, p = d["k"], d["price"]
            win.append((k, p))
            count[k] = count.get(k, 0) + 1
            total[k] = total.get(k, 0) + p
            if len(win) > size:
                ok, op = win.popleft()
                count[ok] -= 1
                total[ok] -= op
                if not count[ok]:
                    del count[ok], total[ok]
            for g, c in count.items():
                out.append({"k": g, "n": c, "total": total[g]})
        return out

    return run


def ref_join(size: int) -> Callable[[list[Item]], list[dict]]:
    def run(items: list[Item]) -> list[dict]:
        wins: dict[str, deque] = {"s1": deque(), "s2": deque()}
        ist = IStream()
        out = []
        for name, d, _ in items:
            mine, other = wins[name], wins["s2" if name == "s1" else "s1"]
            mine.append(d)
            removed = []
            if len(mine) > size:
                old = mine.popleft()
                removed = [(old["id"], o["id"]) if name == "s1" else (o["id"], old["id"])
                           for o in other if o["k"] == old["k"]]
            added = [(d["id"], o["id"]) if name == "s1" else (o["id"], d["id"]) for o in other if o["k"] == d["k"]]
            for r in ist.step(added, removed):
                out.append({"aid": r[0], "bid": r[1]})
        return out

    return run


# ---------------------------------------------------------------- cases

CASES: list[tuple[str, str, Callable[[int], list[Item]], Callable[[list[Item]], list[dict]]]] = [
    ("filter", "SELECT RSTREAM id, price FROM src [RANGE 1 TUPLES] WHERE price < 8", single_input, ref_filter),
    ("filter with arithmetic", "SELECT RSTREAM id, price * 1.1 AS p FROM src [RANGE 1 TUPLES] WHERE price + 1 < 8",
     single_input, ref_filter_arithmetic),
    ("ISTREAM [RANGE 5 TUPLES]", "SELECT ISTREAM id, price FROM src [RANGE 5 TUPLES]", single_input,
     ref_istream_tuples(5)),
    ("ISTREAM [RANGE 50 TUPLES]", "SELECT ISTREAM id, price FROM src [RANGE 50 TUPLES]", single_input,
     ref_istream_tuples(50)),
    ("ISTREAM [RANGE 5000 TUPLES]", "SELECT ISTREAM id, price FROM src [RANGE 5000 TUPLES]", single_input,
     ref_istream_tuples(5000)),
    ("ISTREAM [RANGE 5 SECONDS] (501 tuples)", "SELECT ISTREAM id, price FROM src [RANGE 5 SECONDS]",
     single_input, ref_istream_seconds(5)),
    ("GROUP BY k over [RANGE 50 TUPLES]",
     "SELECT RSTREAM k, count(*) AS n, sum(price) AS total FROM src [RANGE 50 TUPLES] GROUP BY k",
     single_input, ref_group_by(50)),
    ("GROUP BY, hand loop building maps anew",
     "SELECT RSTREAM k, count(*) AS n, sum(price) AS total FROM src [RANGE 50 TUPLES] GROUP BY k",
     single_input, ref_group_by_fresh(50)),
    ("join of two [RANGE 5 TUPLES]",
     "SELECT ISTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 5 TUPLES] AS a, s2 [RANGE 5 TUPLES] AS b "
     "WHERE a:k = b:k", join_input, ref_join(5)),
    ("join with inputs in runs of 50",
     "SELECT ISTREAM a:id AS aid, b:id AS bid FROM s1 [RANGE 5 TUPLES] AS a, s2 [RANGE 5 TUPLES] AS b "
     "WHERE a:k = b:k", join_runs_input, ref_join(5)),
]
SPARK_CASES = ("filter", "ISTREAM [RANGE 50 TUPLES]", "GROUP BY k over [RANGE 50 TUPLES]")
# the reference kernel costs milliseconds per tuple on these: its column runs on the first N tuples only
REFERENCE_TUPLES = {"ISTREAM [RANGE 5 SECONDS] (501 tuples)": 2000, "ISTREAM [RANGE 5000 TUPLES]": 3000}


def _key(row: dict) -> bytes:
    return orjson.dumps(row, option=orjson.OPT_SORT_KEYS)


CLOCK = time.perf_counter  # ``--rounds``: time.process_time (CPU time: less noise on a shared machine)


def _collector(paused: bool) -> Any:
    """What the run's collector does: paused as every host pauses it around a batch (``gc_pause``), or on."""
    import contextlib

    from sbpy.bql.runtime import gc_pause

    return gc_pause.paused() if paused else contextlib.nullcontext()


def run_kernel(query: str, items: list[Item], kernel: str = "auto", paused: bool = True,
               tuples: list[Any] | None = None) -> tuple[float, list[dict]]:
    """Feed ``items`` to ``build_processor``'s choice (``auto``) or the reference kernel (``reference``),
    as one batch (``paused``: with the cyclic collector paused, as the hosts run a batch). A processor with
    a batch entry (``Processor.batch_entry``: the filter, GROUP BY) takes each run of one input's tuples
    in one call, as the driver's and the Spark operators' pipeline feeds it; the time is that call's, whose
    answer — one entry per tuple: nothing, a row, rows or a step result — is what the host consumes, as it
    would consume the hand loop's list; a join with a mixed entry (``Processor.mixed_entry``) takes the
    whole interleaved sequence in one call, as the Spark operator feeds it its inputs' runs. Any other takes
    ``process`` per tuple, its outputs collected.
    ``tuples``: ``items`` as the kernel's ``Tuple``s, built once by the caller as ``items`` are for the hand
    loop (built here when not given)."""
    from sbpy.bql.runtime import ProcessorContext, build_processor
    from sbpy.bql.runtime.processor import batch_entry_of, mixed_entry_of
    from sbpy.bql.runtime.testing import parse_select

    proc = build_processor(parse_select(query), ProcessorContext(kernel=kernel))
    if tuples is None:
        tuples = kernel_tuples(items)
    entry = batch_entry_of(proc)
    mixed = mixed_entry_of(proc)
    out: list[dict] = []
    if mixed is not None:  # a join the host feeds its inputs' interleaved runs (``Processor.mixed_entry``)
        with _collector(paused):
            t0 = CLOCK()
            answer = mixed(tuples)
            took = CLOCK() - t0
        return took, _rows_of(answer)
    if entry is not None:
        runs = _runs(tuples)
        answers = []
        with _collector(paused):
            t0 = CLOCK()
            for name, run in runs:
                answers.append(entry(name, run))
            took = CLOCK() - t0
        for answer in answers:
            out += _rows_of(answer)
        return took, out
    with _collector(paused):
        t0 = CLOCK()
        for t in tuples:
            res = proc.process(t)
            for o in res.outputs:
                out.append(o.data)
        took = CLOCK() - t0
    return took, out


def kernel_tuples(items: list[Item]) -> list[Any]:
    """``items`` as the kernel's input ``Tuple``s (seq = position from 1)."""
    from sbpy.bql.runtime.processor import Tuple

    return [Tuple(d, ts, seq, name) for seq, (name, d, ts) in enumerate(items, 1)]


def _runs(tuples: list[Any]) -> list[tuple[str, list[Any]]]:
    """The tuples as runs of one input each, in order."""
    runs: list[tuple[str, list[Any]]] = []
    for t in tuples:
        if runs and runs[-1][0] == t.input:
            runs[-1][1].append(t)
        else:
            runs.append((t.input, [t]))
    return runs


def _rows_of(answer: list[Any]) -> list[dict]:
    """The output rows of a batch entry's answer, in order."""
    rows: list[dict] = []
    for entry in answer:
        if entry is None:
            continue
        if type(entry) is dict:
            rows.append(entry)
        elif type(entry) is list:
            rows += entry
        elif isinstance(entry, Exception):
            raise entry
        else:
            rows += [o.data for o in entry.outputs]
    return rows


def run_reference(fn: Callable[[list[Item]], list[dict]], items: list[Item], paused: bool = True
                  ) -> tuple[float, list[dict]]:
    with _collector(paused):
        t0 = CLOCK()
        out = fn(items)
        took = CLOCK() - t0
    return took, out


def in_process(n: int, only: set[str] | None = None, rounds: int = 1) -> list[dict[str, Any]]:
    """Per statement: the kernel and the hand loop, alternating ``rounds`` times (the best of each). Each
    timed run starts from the same heap — the outputs of earlier runs freed, the collector run —: what
    earlier outputs a run found still allocated moved the hand loops' times by up to half (GROUP BY
    1.4 against 2.1 µs), so their outputs for the row checks come from one more, untimed, run of each.
    Both sides' inputs are built once per statement, before the rounds (the hand loop's ``items``, the
    kernel's ``Tuple``s): built inside each kernel run, the kernel's inputs took the heap its outputs
    would reuse, and its filter measured 0.17 against 0.13 µs from that alone."""
    results = []
    for name, query, make, ref in CASES:
        if only and name not in only:
            continue
        items = make(n)
        tuples = kernel_tuples(items)
        k_s = r_s = kg_s = rg_s = float("inf")
        for _ in range(rounds):
            gc.collect()
            k_s = min(k_s, run_kernel(query, items, tuples=tuples)[0])
            gc.collect()
            r_s = min(r_s, run_reference(ref, items)[0])
            gc.collect()
            kg_s = min(kg_s, run_kernel(query, items, paused=False, tuples=tuples)[0])
            gc.collect()
            rg_s = min(rg_s, run_reference(ref, items, paused=False)[0])
        k_out, r_out = run_kernel(query, items, tuples=tuples)[1], run_reference(ref, items)[1]
        del tuples
        same = Counter(map(_key, k_out)) == Counter(map(_key, r_out))
        m = min(n, REFERENCE_TUPLES.get(name, n))
        o_s, o_out = run_kernel(query, items[:m], "reference")
        same = same and Counter(map(_key, o_out)) == Counter(map(_key, run_reference(ref, items[:m])[1]))
        results.append({"name": name, "query": query, "n": n, "kernel_us": k_s / n * 1e6,
                        "ref_us": r_s / n * 1e6, "gc_kernel_us": kg_s / n * 1e6, "gc_ref_us": rg_s / n * 1e6,
                        "old_n": m, "old_us": o_s / m * 1e6, "outputs": len(k_out), "same": same})
    return results


def count_ops(fn: Callable[..., Any], *args: Any) -> tuple[int, int]:
    """(bytecodes, Python calls) executed by ``fn(*args)``."""
    ops = calls = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal ops, calls
        if event == "call":
            calls += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            ops += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return ops, calls


def operation_counts(measured: int = 200, warm: int = 100) -> list[tuple[Any, ...]]:
    """Per statement: bytecodes and calls per tuple of the kernel and of the hand loop."""
    from sbpy.bql.runtime import ProcessorContext, build_processor
    from sbpy.bql.runtime.processor import Tuple
    from sbpy.bql.runtime.testing import parse_select

    rows = []
    for name, query, make, ref in CASES:
        items = make(warm + measured)
        proc = build_processor(parse_select(query), ProcessorContext())
        tuples = [Tuple(d, ts, seq, src) for seq, (src, d, ts) in enumerate(items, 1)]
        for t in tuples[:warm]:
            proc.process(t)

        def feed(batch: list[Any]) -> None:
            for t in batch:
                for _ in proc.process(t).outputs:
                    pass

        k_ops, k_calls = count_ops(feed, tuples[warm:])
        h_ops, h_calls = count_ops(ref, items[warm:])
        rows.append((name, k_ops / measured, k_calls / measured, h_ops / measured, h_calls / measured))
    return rows


def contract_floor(n: int, rounds: int = 5) -> list[tuple[str, float, float]]:
    """What the ``Processor`` contract alone costs a tuple: a ``process`` call returning a ``StepResult``
    with one output ``Tuple`` per row (its own row dict), nothing computed — for the filter's rows
    (69 % pass) and for GROUP BY's ten rows a tuple; (case, µs, hand loop µs), CPU time, best of rounds."""
    from sbpy.bql.runtime.processor import StepResult, Tuple

    def filter_only(t: Any) -> Any:
        d = t.data
        if d["price"] < 8:
            return StepResult([Tuple({"id": d["id"], "price": d["price"]}, t.ts, t.seq, "")])
        return StepResult()

    def ten_rows(t: Any) -> Any:
        return StepResult([Tuple({"k": i, "n": 5, "total": 2.0}, t.ts, t.seq, "") for i in range(10)])

    items = single_input(n)
    tuples = [Tuple(d, ts, seq, src) for seq, (src, d, ts) in enumerate(items, 1)]
    out = []
    for name, process, ref in (("filter", filter_only, ref_filter), ("GROUP BY (10 rows a tuple)", ten_rows,
                                                                      ref_group_by(50))):
        k_s = r_s = float("inf")
        for _ in range(rounds):
            gc.collect()
            t0 = time.process_time()
            rows = []
            for t in tuples:
                for o in process(t).outputs:
                    rows.append(o.data)
            k_s = min(k_s, time.process_time() - t0)
            gc.collect()
            t0 = time.process_time()
            ref(items)
            r_s = min(r_s, time.process_time() - t0)
        out.append((name, k_s / n * 1e6, r_s / n * 1e6))
    return out


# ---------------------------------------------------------------- through Spark


def through_spark(n: int, master: str, only: set[str] | None = None) -> dict[str, float]:
    import shutil
    import tempfile

    from sbpy.bql.plan import plan_query
    from sbpy.bql.spark import journal_format as jf
    from sbpy.bql.spark.batch_rows import TupleBatch
    from sbpy.bql.spark.compile import query_spec_stages
    from sbpy.bql.spark.query import QuerySpec
    from sbpy.server.context import ServerContext
    from sbpy.server.journal import JournalWriter

    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b3-"))
    out: dict[str, float] = {}
    ctx = ServerContext(data_dir=tmp / "data", master=master)
    try:
        spark = ctx.spark()
        journal = JournalWriter(tmp / "journal")
        items = single_input(n)
        for start in range(0, n, 10_000):
            journal.append("src", [(jf.ts_to_us(ts), d) for _, d, ts in items[start:start + 10_000]])
        for name, query, _, _ in CASES:
            if name not in SPARK_CASES or (only is not None and name not in only):
                continue
            count = [0]

            def on_batch(batch_id: int, rows: Any, count: list[int] = count) -> None:
                if isinstance(rows, TupleBatch):  # a driver query's (out_rows="tuples"): its maps decoded
                    count[0] += len(rows.outs)
                else:
                    count[0] += sum(1 for r in rows if r["kind"] == "out")

            # as the server runs it: the journal holds a Python source's tuples, not file lines
            plan = plan_query(["src"], [("q", query, ["src"])], line_inputs=())
            spec = QuerySpec(f"b3.{len(out)}", tmp / "journal", ("src",), query_spec_stages(plan),
                             tmp / f"ck{len(out)}", on_batch=on_batch, max_seqs=50_000, plan=plan,
                             out_rows="tuples")  # as the server hands a driver query's rows to a sink
            _, prog = benchlib.run_to_end(spark, spec)
            busy = sum(p["durationMs"].get("triggerExecution", 0) for p in prog) / 1000
            out[name] = busy / n * 1e6
            per_batch = ", ".join(f"{p['durationMs'].get('triggerExecution', 0) / 1000:.2f}" for p in prog)
            print(f"  spark {name} ({plan.execution.value}): {n:,} tuples in {len(prog)} batches, {busy:.1f} s "
                  f"busy ({per_batch}), {count[0]:,} out")
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="tuples per in-process case")
    ap.add_argument("--spark", type=int, default=200_000, help="tuples through the Spark operator (0: skip)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--ops", action="store_true", help="bytecodes and calls per tuple instead of timings")
    ap.add_argument("--rounds", type=int, default=0,
                    help="CPU time, best of this many alternating kernel / hand-loop rounds (0: one wall-clock run)")
    ap.add_argument("--floor", action="store_true", help="the Processor contract's own cost vs the hand loops")
    ap.add_argument("--only", default="", help="comma-separated substrings: run only the statements they name")
    a = ap.parse_args()
    if a.floor:
        print(benchlib.table(("contract alone", "µs", "hand-written µs", "× hand"),
                             [(n, k, r, k / r) for n, k, r in contract_floor(a.n)]))
        return
    global CLOCK
    if a.rounds:
        CLOCK = time.process_time
    if a.ops:
        print(benchlib.table(("statement", "kernel bytecodes", "kernel calls", "hand bytecodes", "hand calls"),
                             [(n, round(ko), f"{kc:.1f}", round(ho), f"{hc:.1f}")
                              for n, ko, kc, ho, hc in operation_counts()]))
        return
    clock = f"CPU time, best of {a.rounds} rounds" if a.rounds else "wall clock"
    print(f"B3: per-tuple cost, {a.n:,} tuples per case ({clock}); {benchlib.load_note()}")
    only = {n for n, *_ in CASES if any(w and w in n for w in a.only.split(","))} if a.only else None
    res = in_process(a.n, only, rounds=max(1, a.rounds))
    spark = through_spark(a.spark, a.master, only) if a.spark else {}
    rows = []
    for r in res:
        s = spark.get(r["name"])
        old = f"{r['old_us']:.1f}" + ("" if r["old_n"] == r["n"] else f" ({r['old_n']:,})")
        rows.append((r["name"], r["n"], r["kernel_us"], r["ref_us"], r["kernel_us"] / r["ref_us"],
                     r["gc_kernel_us"], r["gc_ref_us"], r["gc_kernel_us"] / r["gc_ref_us"], old,
                     "-" if s is None else s, "-" if s is None else s / r["kernel_us"],
                     r["outputs"], "yes" if r["same"] else "NO"))
    print()
    print(benchlib.table(("statement", "tuples", "kernel µs", "hand-written µs", "× hand",
                          "collector on: kernel µs", "hand µs", "× hand", "reference kernel µs", "Spark µs",
                          "Spark/kernel", "outputs", "same rows"), rows))
    print("  kernel µs, hand-written µs: one batch with the cyclic collector paused, as every host runs a"
          " batch (driver, Spark operators, keyed buckets: gc_pause); collector on: the same runs with it"
          " enabled")
    print("  kernel: build_processor's choice (the incremental kernel; the filter and the one-stream ISTREAM"
          " statements decide each new row with stage_codegen's generated step, GROUP BY runs"
          " group_step's generated step, the join pair_step's with a generated projection); reference"
          " kernel: SelectProcessor forced, over the first (n) tuples where given")
    by_name = {r["name"]: r for r in res}
    small, big = by_name.get("ISTREAM [RANGE 5 TUPLES]"), by_name.get("ISTREAM [RANGE 5000 TUPLES]")
    if small and big:
        print(f"  [RANGE 5000 TUPLES] / [RANGE 5 TUPLES] per tuple: {big['kernel_us'] / small['kernel_us']:.2f}×")
    for r in res:
        print(f"  {r['name']}: {r['query']}")
    if not all(r["same"] for r in res):
        print("!! some kernel outputs differ from the hand-written reference")


if __name__ == "__main__":
    main()
