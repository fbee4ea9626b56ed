"""``sbpy runfile``'s progress display (a clock the test moves) and, on Spark, a real runfile's plain
progress lines and summary."""
from __future__ import annotations

import io
import re
import subprocess
import sys

import orjson
import pytest
from sbpy.server.cli.progress import NodeCount, Progress, counts_of

STATUSES = [
    ("source", "src", {"state": "running", "output_stats": {"num_sent_total": 0, "num_dropped": 0}}),
    ("box", "wc", {"state": "running", "input_stats": {"num_received_total": 0, "num_errors": 0},
                   "output_stats": {"num_sent_total": 0, "num_dropped": 0}}),
    ("sink", "out", {"state": "running", "input_stats": {"num_received_total": 0, "num_errors": 0}}),
]


def statuses(sent: int, got: int, out: int, dropped: int = 0, errors: int = 0):
    src, wc, snk = (dict(s) for _, _, s in STATUSES)
    src["output_stats"] = {"num_sent_total": sent, "num_dropped": 0}
    wc["input_stats"] = {"num_received_total": got, "num_errors": errors}
    wc["output_stats"] = {"num_sent_total": out, "num_dropped": dropped}
    snk["input_stats"] = {"num_received_total": out, "num_errors": 0}
    return [("source", "src", src), ("box", "wc", wc), ("sink", "out", snk)]


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_counts_of_node_statuses():
    assert counts_of(statuses(10, 9, 3, dropped=1, errors=2)) == [
        NodeCount("source", "src", "running", None, 10),
        NodeCount("stream", "wc", "running", 9, 3, dropped=1, errors=2),
        NodeCount("sink", "out", "running", 3, None)]


def test_plain_lines_every_period_and_the_summary():
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, "t", tty=False, clock=clock, plain_every=5.0, window=2.0)
    for second in range(1, 12):
        clock.now = 100.0 + second
        progress.update(counts_of(statuses(100 * second, 100 * second, 25 * second)))
    clock.now = 112.5
    progress.finish(counts_of(statuses(1200, 1200, 300)))
    assert out.getvalue().splitlines() == [
        "runfile t: 5.0 s · src 500 written (100/s) · wc 500 read, 125 written · out 125 read",
        "runfile t: 10.0 s · src 1000 written (100/s) · wc 1000 read, 250 written · out 250 read",
        "runfile t: done in 12.5 s",
        "  source  src  1200 written                96/s",
        "  stream  wc   1200 read, 300 written      24/s",
        "  sink    out  300 read                    24/s",
    ]


def test_summary_rates_count_from_the_resume():
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, "t", tty=False, clock=clock)
    clock.now += 30  # Spark's start-up
    progress.resumed()
    clock.now += 10
    progress.finish(counts_of(statuses(1000, 1000, 500)))
    assert out.getvalue().splitlines()[:2] == ["runfile t: done in 40.0 s (10.0 s since the sources resumed)",
                                               "  source  src  1000 written               100/s"]


def test_summary_names_dropped_and_failed_tuples():
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, "t", tty=False, clock=clock)
    clock.now += 2
    progress.finish(counts_of(statuses(4, 4, 1, dropped=2, errors=1)))
    assert "  stream  wc   4 read, 1 written, 2 dropped, 1 failed     0.5/s" in out.getvalue().splitlines()


def test_terminal_block_is_redrawn_in_place_and_erased_for_logs():
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, "t", tty=True, clock=clock, redraw_every=0.2)
    clock.now += 1
    progress.update(counts_of(statuses(10, 10, 2)))
    first = out.getvalue()
    assert first.startswith("runfile t · 1.0 s · Ctrl-C stops\x1b[K\n  source  src")
    assert first.count("\n") == 4
    clock.now += 0.1
    progress.update(counts_of(statuses(11, 11, 2)))  # too soon: not redrawn
    assert out.getvalue() == first
    with progress.paused():
        out.write("a log line\n")
    assert out.getvalue() == first + "\x1b[4F\x1b[J" + "a log line\n"
    clock.now += 0.1
    progress.update(counts_of(statuses(12, 12, 3)))  # nothing drawn: drawn at once
    redrawn = out.getvalue().split("a log line\n")[1]
    assert redrawn.startswith("runfile t · 1.2 s · Ctrl-C stops\x1b[K\n") and "src  12 written" in redrawn
    progress.finish(counts_of(statuses(12, 12, 3)))
    assert "\x1b[4F\x1b[J" + "runfile t: done in 1.2 s\n" in out.getvalue()


def test_note_prints_above_the_block():
    out, clock = io.StringIO(), Clock()
    progress = Progress(out, "t", tty=True, clock=clock)
    progress.note("starting Spark")
    progress.update(counts_of(statuses(1, 1, 0)))
    drawn = out.getvalue()
    progress.note("more")
    assert drawn.startswith("runfile t: starting Spark\nrunfile t · 0.0 s")
    assert out.getvalue() == drawn + "\x1b[4F\x1b[J" + "runfile t: more\n"


def test_rates_follow_the_window():
    clock = Clock()
    progress = Progress(io.StringIO(), "t", tty=False, clock=clock, window=2.0)
    rates = []
    for second, sent in enumerate([0, 10, 20, 30, 130, 230], start=1):
        clock.now = 100.0 + second
        rates.append(progress.rates(counts_of(statuses(sent, 0, 0)))["src"])
    assert rates == [0.0, 10.0, 10.0, 10.0, 55.0, 100.0]


@pytest.mark.spark
@pytest.mark.slow
def test_runfile_prints_plain_progress_and_the_summary(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(orjson.dumps({"n": i}).decode() + "\n" for i in range(50)))
    (tmp_path / "p.bql").write_text(f"""
        CREATE SOURCE src TYPE file WITH path = "{src}";
        CREATE STREAM evens AS SELECT RSTREAM n FROM src [RANGE 1 TUPLES] WHERE n % 2 = 0;
        CREATE SINK snk TYPE file WITH path = "{tmp_path / 'out.jsonl'}";
        INSERT INTO snk FROM evens;
    """)
    (tmp_path / "sensorbee.yaml").write_text(f'spark:\n  master: "local[1]"\n  data_dir: "{tmp_path / "d"}"\n')
    r = subprocess.run([sys.executable, "-m", "sbpy.server.cli.main", "runfile", "-c", "sensorbee.yaml", "p.bql"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert [orjson.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()] == \
        [{"n": i} for i in range(0, 50, 2)]
    lines = r.stderr.splitlines()
    done = next(i for i, line in enumerate(lines)
                if re.fullmatch(r"runfile p: done in \d+\.\d s \(\d+\.\d s since the sources resumed\)", line))
    assert [re.sub(r" +\S+/s$", "", line) for line in lines[done + 1 : done + 4]] == [
        "  source  src    50 written",
        "  stream  evens  50 read, 25 written",
        "  sink    snk    25 read"]
    assert "\x1b[" not in r.stderr  # not a terminal: no redrawing
    assert lines[0] == "runfile p: 4 statements; starting Spark (local[1])"
    assert "runfile p: statements done; resuming the sources" in lines[:done]
    assert all(re.match(r"runfile p: \d+\.\d s · src \d+ written", line) for line in lines[:done]
               if line.startswith("runfile p:") and "statements" not in line), r.stderr
