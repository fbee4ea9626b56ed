"""B5 — MATCH_RECOGNIZE throughput: ``PATTERN (A B+ C)`` over a ticker, PARTITION BY symbol, 8 symbols.

    SELECT RSTREAM * FROM ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY t
        MEASURES A.t AS start_t, LAST(B.t) AS bottom_t, C.t AS end_t ONE ROW PER MATCH
        PATTERN (A B+ C) DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price))

Rows/s of (1) the in-process ``MatchRecognizeProcessor`` (pre-built tuples, no JSON) with each engine —
the compiled lane over the deterministic automaton (the default for this pattern:
``bql/runtime/match/lane.py``), the automaton driven by its runner alone (``SBPY_MATCH_ENGINE=automaton``)
and the backtracking matcher it falls back to (``SBPY_MATCH_ENGINE=matcher``) — and (2) the Spark topology path (default engine) (journal → router → ``groupBy(symbol key)`` matcher → ``foreachBatch``; rows/s
= rows / Spark busy time, the sum of ``triggerExecution``, over all batches and over the batches after the
first, which pays for starting Python workers and operators), each as a ratio against a hand-written Python
automaton for the same pattern run in this process over the same rows; (3) the same statement as the
planner runs it by default (``plan_query``, unforced: the driver, one thread), over the same journal.
``--batch``: journal seqs per micro-batch (default 20k, several batches; the server's cap is 1M). ``--keyed-only``:
the keyed plan alone (with ``--batch 200000``, its rate after the first batch is the steady one). With ``--sequential`` the Spark
path is also measured with the stage forced onto the single-group sequential operator. Every run checks
that the matcher, the automaton and Spark found the same matches.

The guard: ``PATTERN (A+ B+ C+ E)`` with A, B, C AS v > 0 and E AS v < 0 over ``--guard`` rows (100k)
of one partition, all v = 1 — no match, and the time must stay under 10 s (and linear: it is also run
over a tenth of the rows), with each engine.

Run: ``/work/venv/bin/python bench/b5_match.py [--n 500000] [--spark 100000] [--guard 100000]``.
The Spark path defaults to 100k rows (not 500k) to keep the run within minutes on 2 shared cores.
"""
from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib  # noqa: E402

SYMBOLS = [f"SYM{i}" for i in range(8)]
QUERY = ("SELECT RSTREAM * FROM ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY t "
         "MEASURES A.t AS start_t, LAST(B.t) AS bottom_t, C.t AS end_t ONE ROW PER MATCH "
         "PATTERN (A B+ C) DEFINE B AS B.price < PREV(B.price), C AS C.price > PREV(C.price))")
GUARD = ("SELECT RSTREAM * FROM s MATCH_RECOGNIZE (ORDER BY t MEASURES FIRST(A.t) AS t0 "
         "PATTERN (A+ B+ C+ E) DEFINE A AS v > 0, B AS v > 0, C AS v > 0, E AS v < 0)")
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def ticker(n: int, seed: int = 5) -> list[dict[str, Any]]:
    """``n`` rows, symbols round-robin-ish at random, a random walk of integer prices per symbol."""
    rng = random.Random(seed)
    price = {s: 100 for s in SYMBOLS}
    rows = []
    for i in range(n):
        s = SYMBOLS[rng.randrange(8)]
        price[s] += rng.choice((-2, -1, -1, 0, 1, 1, 2))
        rows.append({"symbol": s, "t": i, "price": price[s]})
    return rows


# ---------------------------------------------------------------- the hand-written automaton


def automaton(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``A B+ C`` with B: price < prev, C: price > prev, SKIP PAST LAST ROW, per symbol.

    B and C exclude each other on one row, so the greedy match is deterministic: A is any row, B+ the
    strictly falling run after it, C the first rise. An equal price (or no fall right after A) fails
    the attempt and the current row becomes the next A."""
    state: dict[str, list] = {}  # symbol -> [phase, prev price, A.t, last B.t]; phase 0 none, 1 A, 2 B
    out = []
    for r in rows:
        s, p, t = r["symbol"], r["price"], r["t"]
        st = state.get(s)
        if st is None:
            state[s] = [1, p, t, None]
            continue
        phase, prev = st[0], st[1]
        if phase == 2:
            if p < prev:
                st[1], st[3] = p, t
            elif p > prev:
                out.append({"symbol": s, "start_t": st[2], "bottom_t": st[3], "end_t": t})
                st[0], st[1] = 0, p
            else:
                st[0], st[1], st[2] = 1, p, t
        elif phase == 1:
            if p < prev:
                st[0], st[1], st[3] = 2, p, t
            else:
                st[1], st[2] = p, t
        else:
            st[0], st[1], st[2] = 1, p, t
    return out


# ---------------------------------------------------------------- in-process matcher


def matcher_run(query: str, rows: list[dict[str, Any]], stream: str,
                engine: str | None = None) -> tuple[float, list[dict[str, Any]]]:
    """(seconds, output rows) of the in-process processor; ``engine``: ``SBPY_MATCH_ENGINE`` for it."""
    import os

    from sbpy.bql.runtime import build_processor
    from sbpy.bql.runtime.processor import Tuple
    from sbpy.bql.runtime.testing import parse_select

    saved = os.environ.get("SBPY_MATCH_ENGINE")
    if engine is not None:
        os.environ["SBPY_MATCH_ENGINE"] = engine
    try:
        proc = build_processor(parse_select(query))
    finally:
        if saved is None:
            os.environ.pop("SBPY_MATCH_ENGINE", None)
        else:
            os.environ["SBPY_MATCH_ENGINE"] = saved
    tuples = [Tuple(r, T0, i + 1, stream) for i, r in enumerate(rows)]
    out = []
    t0 = time.perf_counter()
    for tup in tuples:
        out.extend(proc.process(tup).outputs)
    out.extend(proc.finish(stream).outputs)
    return time.perf_counter() - t0, [o.data for o in out]


def _key(m: dict[str, Any]) -> tuple:
    return (m["symbol"], m["start_t"])


# ---------------------------------------------------------------- Spark


def _sequential_factory(spec: Any) -> Any:
    """Builds the BQL stage but, as a factory, keeps it off the keyed plan (pickled by value)."""
    from sbpy.bql.spark.operator import StageSpec, build_stage

    return build_stage(StageSpec(spec.node, spec.bql_text, spec.inputs))


def through_spark(rows: list[dict[str, Any]], master: str, sequential: bool,
                  guard_rows: list[dict[str, Any]], a_max_seqs: int = 20_000, planned: bool = True
                  ) -> list[dict[str, Any]]:
    import shutil
    import tempfile

    from sbpy.bql.plan import plan_query
    from sbpy.bql.spark import journal_format as jf
    from sbpy.bql.spark.keyed_plan import plan_keyed
    from sbpy.bql.spark.operator import StageSpec
    from sbpy.bql.spark.query import QuerySpec, start_query
    from sbpy.server.context import ServerContext
    from sbpy.server.journal import JournalWriter

    tmp = Path(tempfile.mkdtemp(prefix="sbpy-b5-"))
    results = []
    ctx = ServerContext(data_dir=tmp / "data", master=master)
    try:
        spark = ctx.spark()
        for name, data in (("ticker", rows), ("s", guard_rows)):
            journal = JournalWriter(tmp / f"journal-{name}")
            for start in range(0, len(data), 10_000):
                journal.append(name, [(jf.ts_to_us(T0), d) for d in data[start:start + 10_000]])
            journal.end(name)
        journal = JournalWriter(tmp / "journal-warm")
        journal.append("ticker", [(jf.ts_to_us(T0), d) for d in rows[:2000]])
        for label, factory in (("keyed", None), ("sequential", _sequential_factory)):  # warm workers and JVM
            handle = start_query(spark, QuerySpec(f"b5.warm.{label}", tmp / "journal-warm", ("ticker",),
                                                  [StageSpec("m", QUERY, ("ticker",), factory=factory)],
                                                  tmp / f"ck-warm-{label}"))
            try:
                handle.process_all_available()
            finally:
                handle.stop()
        runs = [("keyed", "ticker", QUERY, None)]
        if planned:  # the planner's default execution for the statement, as the server would run it
            runs.append(("planned", "ticker", QUERY, None))
        if sequential:
            runs.append(("sequential", "ticker", QUERY, _sequential_factory))
        if guard_rows:
            runs.append(("guard", "s", GUARD, None))
        for label, name, query, factory in runs:
            got: list[dict[str, Any]] = []

            def on_batch(batch_id: int, out_rows: list[dict[str, Any]], got: list = got) -> None:
                got.extend(r["data"] for r in out_rows if r["kind"] == "out")

            stage = StageSpec("m", query, (name,), factory=factory)
            keyed = plan_keyed([stage], (name,)) is not None
            plan = plan_query([name], [("m", query, [name])]) if label == "planned" else None
            spec = QuerySpec(f"b5.{label}", tmp / f"journal-{name}", (name,), [stage], tmp / f"ck-{label}",
                             on_batch=on_batch, max_seqs=a_max_seqs, plan=plan)
            if plan is not None:  # as the server starts it: the planner's default execution
                keyed, label = False, f"planned: {plan.execution.value}"
            wall, prog = benchlib.run_to_end(spark, spec)
            busy = benchlib.trigger_seconds(prog)
            later = prog[1:]  # without the first batch (Python workers, operator set-up, planning)
            steady = (sum(p["numInputRows"] for p in later), benchlib.trigger_seconds(later))
            n = len(rows) if name == "ticker" else len(guard_rows)
            results.append({"label": label, "keyed": keyed, "n": n, "busy": busy, "wall": wall,
                            "batches": len(prog), "matches": got, "steady": steady})
            print(f"  spark {label} ({'keyed' if keyed else 'one thread'}): {n:,} rows in {len(prog)} batches, "
                  f"{busy:.1f} s busy ({prog[0]['durationMs'].get('triggerExecution', 0) / 1000:.1f} s in the "
                  f"first), {wall:.1f} s wall, {len(got):,} matches")
    finally:
        ctx.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500_000, help="rows for the in-process matcher and the automaton")
    ap.add_argument("--spark", type=int, default=100_000, help="rows through the Spark topology path (0: skip)")
    ap.add_argument("--sequential", action="store_true", help="also run Spark with the single-group operator")
    ap.add_argument("--guard", type=int, default=100_000, help="rows of the guard pattern")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--batch", type=int, default=20_000,
                    help="journal seqs per Spark micro-batch (the server's default is 1,000,000)")
    ap.add_argument("--keyed-only", action="store_true",
                    help="Spark: the keyed plan alone (no in-process engines before it, no planned run after)")
    a = ap.parse_args()
    print(f"B5: MATCH_RECOGNIZE (A B+ C), PARTITION BY symbol, {len(SYMBOLS)} symbols; {benchlib.load_note()}")
    rows = ticker(a.n)
    t0 = time.perf_counter()
    ref = automaton(rows)
    ref_s = time.perf_counter() - t0
    ref_rate = a.n / ref_s
    table = [("hand-written automaton", a.n, ref_rate, 1.0, len(ref), "reference")]
    engines = () if a.keyed_only else (("compiled", "in-process, compiled lane"),
                                        ("automaton", "in-process, automaton runner"),
                                        ("matcher", "in-process, matcher engine"))
    for engine, label in engines:
        from sbpy.bql.runtime.match import MatchRecognizeProcessor
        from sbpy.bql.runtime.testing import parse_select

        desc = MatchRecognizeProcessor(parse_select(QUERY), None, engine=engine).engine_description()
        print(f"  {engine} engine: {desc}")
        mr_s, got = matcher_run(QUERY, rows, "ticker", engine)
        same = sorted(got, key=_key) == sorted(ref, key=_key)
        mr_rate = a.n / mr_s
        table.append((label, a.n, mr_rate, mr_rate / ref_rate, len(got), "yes" if same else "NO"))
    guard_rows = [{"t": i, "v": 1} for i in range(a.guard)]
    spark = []
    if a.spark:
        srows = rows[:a.spark]
        sref = automaton(srows)
        spark = through_spark(srows, a.master, a.sequential, guard_rows if a.guard else [], a.batch,
                              planned=not a.keyed_only)
        for r in spark:
            if r["label"] == "guard":
                continue
            ok = sorted(r["matches"], key=_key) == sorted(sref, key=_key)
            rate = r["n"] / r["busy"] if r["busy"] else float("nan")
            label = f"Spark {r['label']} ({'keyed' if r['keyed'] else 'one thread'})"
            table.append((label, r["n"], rate, rate / ref_rate, len(r["matches"]), "yes" if ok else "NO"))
            rows_after, busy_after = r["steady"]
            if busy_after:
                rate = rows_after / busy_after
                table.append(("  after the first batch", rows_after, rate, rate / ref_rate, "", ""))
    print()
    print(benchlib.table(("path", "rows", "rows/s", "× automaton", "matches", "same matches"), table))
    if a.guard:
        print("\nguard PATTERN (A+ B+ C+ E), one partition, v = 1:")
        for engine in ("compiled", "automaton", "matcher"):
            tenth_s, _ = matcher_run(GUARD, guard_rows[:a.guard // 10], "s", engine)
            g_s, g_out = matcher_run(GUARD, guard_rows, "s", engine)
            bound = "OK" if g_s < 10 else "OVER"
            print(f"  {engine}: {a.guard:,} rows {g_s:.2f} s ({bound} the 10 s bound), "
                  f"{a.guard // 10:,} rows {tenth_s:.2f} s (x{g_s / tenth_s:.1f} for 10x the rows), "
                  f"{len(g_out)} matches")
        for r in spark:
            if r["label"] == "guard":
                print(f"  through Spark: {r['busy']:.2f} s busy, {r['wall']:.2f} s wall, {len(r['matches'])} matches")
    print(f"\nquery: {QUERY}")


if __name__ == "__main__":
    main()
