"""B3 shapes — per-tuple cost (µs) of common statement shapes in the in-process kernel, next to the
sequential reference kernel in the same process.

``b3_per_tuple.py`` holds SensorBee's benchmark statements to hand-written loops; this bench covers the
shapes around them that users write — a moving average (aggregates without GROUP BY), HAVING,
ISTREAM over groups, arithmetic, function calls, casts, LIKE and IN in WHERE or the select list — each
run through ``build_processor``'s choice (its batch entry where it has one, as the hosts feed it) and
through the reference kernel (``SelectProcessor``, ``ProcessorContext(kernel="reference")``) over the
first ``--ref-n`` tuples. Every row checks that both emitted the same rows, tuple for tuple, over those
tuples. Both run with the cyclic collector paused, as every host runs a batch.

Run: ``.venv/bin/python bench/b3_shapes.py [--n 50000] [--ref-n 5000] [--rounds 3]``. Prints a table.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import b3_per_tuple as b3

SHAPES = [
    ("moving average", "SELECT RSTREAM count(*) AS n, avg(price) AS a FROM src [RANGE 50 TUPLES]"),
    ("ISTREAM count over 5 s", "SELECT ISTREAM count(*) AS n FROM src [RANGE 5 SECONDS]"),
    ("ISTREAM GROUP BY", "SELECT ISTREAM k, count(*) AS n FROM src [RANGE 50 TUPLES] GROUP BY k"),
    ("GROUP BY ... HAVING", ("SELECT RSTREAM k, count(*) AS n FROM src [RANGE 50 TUPLES] WHERE price < 8 "
                             "GROUP BY k HAVING count(*) > 2")),
    ("keyed sums over [RANGE 5000 TUPLES]",
     "SELECT RSTREAM k, count(*) AS n, sum(price) AS total FROM src [RANGE 5000 TUPLES] GROUP BY k"),
    ("ISTREAM keyed avg over 5 s", "SELECT ISTREAM k, avg(price) AS a FROM src [RANGE 5 SECONDS] GROUP BY k"),
    ("filter with arithmetic", "SELECT RSTREAM id, price * 1.1 AS p FROM src [RANGE 1 TUPLES] WHERE price + 1 < 8"),
    ("ISTREAM with arithmetic", "SELECT ISTREAM id, price * 2 AS p2 FROM src [RANGE 50 TUPLES] WHERE price > 2"),
    ("ISTREAM with a function", "SELECT ISTREAM id, str(price) AS s FROM src [RANGE 50 TUPLES]"),
    ("filter with LIKE", "SELECT RSTREAM id, name FROM src [RANGE 1 TUPLES] WHERE name LIKE \"sensor-1%\""),
    ("filter with a cast", "SELECT RSTREAM id, price::int AS p FROM src [RANGE 1 TUPLES] WHERE price > 2"),
    ("filter with IN and abs()", ("SELECT RSTREAM id, abs(price - 5) AS d FROM src [RANGE 1 TUPLES] "
                                  "WHERE k IN (1, 2, 3)")),
]


def _answers(query: str, tuples: list[Any], kernel: str) -> tuple[float, list[list[dict]]]:
    """CPU seconds and per tuple its output rows, through the kernel's batch entry where it has one."""
    from sbpy.bql.runtime import ProcessorContext, build_processor, gc_pause
    from sbpy.bql.runtime.processor import StepResult, batch_entry_of
    from sbpy.bql.runtime.testing import parse_select

    proc = build_processor(parse_select(query), ProcessorContext(kernel=kernel))
    entry = batch_entry_of(proc)
    gc.collect()
    with gc_pause.paused():
        t0 = time.process_time()
        if entry is not None:
            raw = entry("src", tuples)
        else:
            raw = [proc.process(t) for t in tuples]
        took = time.process_time() - t0
    rows = []
    for answer in raw:
        if answer is None:
            rows.append([])
        elif type(answer) is dict:
            rows.append([answer])
        elif type(answer) is list:
            rows.append(answer)
        elif isinstance(answer, StepResult):
            if answer.dropped:
                raise RuntimeError(f"{query}: a tuple was dropped ({answer.dropped[0].error})")
            rows.append([o.data for o in answer.outputs])
        else:
            raise RuntimeError(f"{query}: {answer!r}")
    return took, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--ref-n", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    items = b3.single_input(a.n)
    tuples = b3.kernel_tuples(items)
    ref_tuples = tuples[:a.ref_n]
    load = os.getloadavg()
    print(f"B3 shapes: per-tuple cost, {a.n:,} tuples (reference kernel: {a.ref_n:,}), CPU time, best of "
          f"{a.rounds}; load avg {load[0]:.2f} (1 min) {load[1]:.2f} (5 min) on {os.cpu_count()} CPUs\n")
    table = [("shape", "kernel µs", "reference kernel µs", "× reference", "same rows")]
    for name, query in SHAPES:
        k_best = r_best = float("inf")
        for _ in range(a.rounds):
            k_best = min(k_best, _answers(query, tuples, "auto")[0] / len(tuples))
            r_best = min(r_best, _answers(query, ref_tuples, "reference")[0] / len(ref_tuples))
        same = _answers(query, ref_tuples, "auto")[1] == _answers(query, ref_tuples, "reference")[1]
        table.append((name, f"{k_best * 1e6:.2f}", f"{r_best * 1e6:.1f}", f"{k_best / r_best:.3f}",
                      "yes" if same else "NO"))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for i, row in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for name, query in SHAPES:
        print(f"  {name}: {query}")


if __name__ == "__main__":
    main()
