"""Soak run (issue 12): a steady stream through a small topology of a real ``sbpy run`` for a given time,
sampling the resident memory (RSS) of the server process and of its Spark driver JVM and the disk use of
the server's data folder (journal, checkpoints, persisted statements) every ``--every`` seconds.

    nice -n 10 .venv/bin/python tests/stress/soak.py --minutes 60 --every 30 [--rate 100] [--csv soak.csv]

The topology (created over REST, like a user would):

    CREATE SOURCE src TYPE file WITH path = <ids 1..1000>, repeat = -1, interval = 1/rate;
    CREATE STREAM s AS SELECT RSTREAM count(*) AS n, max(id) AS m FROM src [RANGE 10 TUPLES];
    CREATE SINK snk TYPE file WITH path = <out>, max_size = 1, max_backups = 2;  -- rotated: bounded
    INSERT INTO snk FROM s;

Every sample prints one line; at the end a small table gives the samples nearest to the ``--marks``
(minutes; default ``0,10,60``), plus the tuples the source sent and the sink's output folder size. The
figures are printed, never asserted: a soak is read by a person (README's Reliability section). The
server is killed at the end (its process group) and the work folder removed unless ``--keep``.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from cluster import free_port
from proc_info import jvm_pid, rss_mb
from server_process import Server

QUERY = "SELECT RSTREAM count(*) AS n, max(id) AS m FROM src [RANGE 10 TUPLES]"


@dataclass
class Sample:
    seconds: float
    server_rss_mb: float
    jvm_rss_mb: float
    data_mb: float
    out_mb: float
    sent: int


def disk_mb(folder: Path) -> float:
    """Allocated size of every file under ``folder`` in MB (files vanishing meanwhile are skipped)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total / 2**20


class Soak:
    """One server, one topology, samples until ``minutes`` have passed."""

    def __init__(self, root: Path, rate: float, log=print):
        self.root, self.rate, self.log = root, rate, log
        self.data, self.outdir = root / "data", root / "out"
        self.samples: list[Sample] = []
        self.server: Server | None = None

    def start(self) -> None:
        self.outdir.mkdir(parents=True, exist_ok=True)
        src = self.root / "in.jsonl"
        src.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(1, 1001)))
        port = free_port()
        config = self.root / "sensorbee.yaml"
        config.write_text(f'network:\n  listen_on: "127.0.0.1:{port}"\nlogging:\n  min_log_level: warn\n'
                          f'spark:\n  master: "local[2]"\n  data_dir: data\n')
        self.server = Server(config, port, self.root / "server.log")
        self.server.start(timeout=300)
        r = httpx.post(self.server.api + "/topologies", json={"name": "soak"}, timeout=60)
        assert r.status_code == 200, r.text
        self.server.queries("soak", f"""
            CREATE PAUSED SOURCE src TYPE file WITH path = "{src}", repeat = -1, interval = {1 / self.rate};
            CREATE STREAM s AS {QUERY};
            CREATE SINK snk TYPE file WITH path = "{self.outdir / 'out.jsonl'}", max_size = 1, max_backups = 2;
            INSERT INTO snk FROM s;
            RESUME SOURCE src;""")

    def sample(self, t0: float) -> Sample:
        pid = self.server.proc.pid
        try:
            sent = self.server.source_sent("soak")
        except httpx.HTTPError:
            sent = -1
        s = Sample(seconds=time.monotonic() - t0, server_rss_mb=rss_mb(pid), jvm_rss_mb=rss_mb(jvm_pid(pid)),
                   data_mb=disk_mb(self.data), out_mb=disk_mb(self.outdir), sent=sent)
        self.samples.append(s)
        return s

    def run(self, minutes: float, every: float) -> None:
        t0 = time.monotonic()
        end = t0 + minutes * 60
        self.log(f"{'min':>6} {'server MB':>10} {'JVM MB':>8} {'data MB':>8} {'out MB':>7} {'sent':>9} {'load':>5}")
        while True:
            s = self.sample(t0)
            self.log(f"{s.seconds / 60:>6.1f} {s.server_rss_mb:>10.0f} {s.jvm_rss_mb:>8.0f} {s.data_mb:>8.1f} "
                     f"{s.out_mb:>7.1f} {s.sent:>9} {os.getloadavg()[0]:>5.1f}")
            assert self.server.proc.poll() is None, f"the server exited:\n{self.server.tail()}"
            if time.monotonic() >= end:
                return
            time.sleep(max(0.0, min(every, end - time.monotonic())))

    def stop(self) -> None:
        if self.server is not None:
            self.server.kill()


def marks_table(samples: list[Sample], marks: list[float]) -> str:
    """The sample nearest to each mark (minutes), one row each."""
    head = f"{'at':>8} {'server RSS MB':>14} {'JVM RSS MB':>11} {'data MB':>8} {'sink out MB':>12} {'tuples sent':>12}"
    out = [head, "-" * len(head)]
    for m in marks:
        s = min(samples, key=lambda x: abs(x.seconds - m * 60))
        out.append(f"{s.seconds / 60:>6.1f} m {s.server_rss_mb:>14.0f} {s.jvm_rss_mb:>11.0f} {s.data_mb:>8.1f} "
                   f"{s.out_mb:>12.1f} {s.sent:>12}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--every", type=float, default=30, help="seconds between samples")
    ap.add_argument("--rate", type=float, default=100, help="input tuples per second")
    ap.add_argument("--marks", default="0,10,60", help="minutes to show in the final table")
    ap.add_argument("--csv", help="also write every sample to this CSV file")
    ap.add_argument("--journal-roll-bytes", type=int,
                    help="the server's journal file size (SBPY_JOURNAL_ROLL_BYTES; default 16 MiB): smaller "
                         "files are pruned sooner, so a short soak shows the disk level off")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="sbpy-soak-"))
    if args.journal_roll_bytes:
        os.environ["SBPY_JOURNAL_ROLL_BYTES"] = str(args.journal_roll_bytes)  # the server inherits it
    print(f"soak: {args.minutes} min, {args.rate} tuples/s, sample every {args.every} s, folder {root}"
          + (f", journal files of {args.journal_roll_bytes} bytes" if args.journal_roll_bytes else ""), flush=True)
    soak = Soak(root, args.rate, log=lambda s: print(s, flush=True))
    load0 = os.getloadavg()
    try:
        soak.start()
        soak.run(args.minutes, args.every)
    finally:
        soak.stop()
    marks = [float(m) for m in args.marks.split(",") if m and float(m) <= args.minutes + 0.5]
    print(f"\nload average at start {load0[0]:.1f}, at end {os.getloadavg()[0]:.1f} (1 min)")
    print(marks_table(soak.samples, marks))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(Sample.__dataclass_fields__)
            for s in soak.samples:
                w.writerow([s.seconds, s.server_rss_mb, s.jvm_rss_mb, s.data_mb, s.out_mb, s.sent])
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
