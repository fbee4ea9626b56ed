"""A randomized crash harness: a real ``sbpy run`` process (loopback port, its own config and data folder)
runs one topology per case at once, is killed with SIGKILL at random points and restarted on the same
config (or its Spark driver JVM is killed and the server's supervisor restarts it), and every sink's
output is then checked exactly once, window values included.

Cases (each its own topology; file source ``src`` of ids 1..N → stream ``s`` AS ``QUERY`` → file sinks):

- ``bql_file``: the topology is ``topologies.tfile.bql_file`` of the config (rebuilt at every start);
- ``rest``: created over REST (restored from its persisted statements);
- ``two_sinks``: created over REST with two sinks on ``s``.

Kill points (one per kill, aimed at a random case; the other cases are wherever they are):
``before_output`` (once the target's source has sent a few tuples), ``mid_stream`` (at a random output
count), ``source_end`` (right after the target's source has ended) and ``replan`` (while a late sink
attaches to ``s``, which already feeds a sink: the running query is split, ``nodes/replan.py``) kill the
server's process group; ``jvm`` (at a random output count) kills only the Spark driver JVM, and the run
goes on once the supervisor has started a new one (``GET /runtime_status`` 200 again, a new JVM pid).

Expected outputs follow from the input: with ``[RANGE 10 TUPLES]`` and RSTREAM the i-th output is
``{"n": min(i, 10), "m": i}``. A sink present from the start must hold exactly that list; a late sink a
contiguous tail of it (it sees the outputs from its attach on), each once. Everything random comes from
one seed, printed first: ``CrashRun(root, seed=S, ...)`` replays a failure's choices (the timing of a
real process still varies). Every wait polls a condition with a deadline.
"""
from __future__ import annotations

import itertools
import json
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cluster import free_port
from proc_info import alive, jvm_pid
from server_process import Server, lines

QUERY = "SELECT RSTREAM count(*) AS n, max(id) AS m FROM src [RANGE 10 TUPLES]"
CASES = {"bql_file": "tfile", "rest": "trest", "two_sinks": "ttwo"}  # case -> topology name
POINTS = ("before_output", "mid_stream", "source_end", "replan", "jvm")
UNPERSISTED_ATTACH = "the kill cut the late attach before its INSERT INTO was persisted"


def expected(n: int) -> list[dict[str, int]]:
    """The stream's outputs for ids 1..n."""
    return [{"n": min(i, 10), "m": i} for i in range(1, n + 1)]


@dataclass
class Check:
    """One sink's file against its expected outputs (counted by the ``m`` each output carries)."""

    got: int
    want: int
    lost: int
    duplicated: int
    wrong: int  # an output with the right m but other window values, or an m out of range
    ordered: bool

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.wrong) and self.ordered and self.got == self.want


def check(rows: list[dict], all_outputs: list[dict], tail: bool = False) -> Check:
    """``rows`` against ``all_outputs`` (or, with ``tail``, against its tail from the first row's m)."""
    first = rows[0].get("m", 1) if tail and rows else 1
    want = all_outputs[first - 1:] if isinstance(first, int) and first >= 1 else all_outputs
    by_m = {w["m"]: w for w in want}
    ms = [r.get("m") for r in rows]
    seen = set(ms)
    return Check(got=len(rows), want=len(want) if rows or not tail else 0,
                 lost=sum(1 for m in by_m if m not in seen) if rows or not tail else 0,
                 duplicated=len(ms) - len(seen),
                 wrong=sum(1 for r in rows if by_m.get(r.get("m")) != r),
                 ordered=all(isinstance(a, int) and isinstance(b, int) and a < b for a, b in itertools.pairwise(ms)))


@dataclass
class CaseResult:
    case: str
    kills: list[str] = field(default_factory=list)  # the observed point of each kill for this case
    sinks: dict[str, Check] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timed_out: bool = False  # its outputs had not all arrived when the run's deadline passed

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.sinks.values())

    @property
    def undelivered(self) -> bool:
        """Not ok only because the deadline passed first: every sink holds a correct prefix of its
        outputs (none duplicated, none wrong, in order), the rest had not arrived (e.g. its queries
        were still being restarted on a loaded machine). Counted apart from outputs lost for good."""
        return (not self.ok and self.timed_out
                and all(not (c.duplicated or c.wrong) and c.ordered for c in self.sinks.values()))


class CrashRun:
    """One server, every case at once, ``kills`` SIGKILLs at random points, then the checks."""

    def __init__(self, root: Path, seed: int, kills: int, n: int = 300, interval: float = 0.05,
                 cases: tuple[str, ...] = tuple(CASES), points: tuple[str, ...] = POINTS, log=print):
        self.root, self.seed, self.kills, self.n, self.interval = Path(root), seed, kills, n, interval
        self.cases, self.points, self.log = cases, points, log
        self.rng = random.Random(seed)
        self.src = self.root / "in.jsonl"
        self.results = {c: CaseResult(c) for c in cases}
        self.late: dict[str, str] = {}  # case -> "pending" / "persisted" / "lost"
        self.late_after_end: dict[str, bool] = {}  # the stream had stopped when the late sink attached
        self.aimed: list[str] = []  # the point each kill aimed at, in order
        self.server: Server | None = None

    # ------------------------------------------------------------ setup

    def out(self, case: str, sink: str) -> Path:
        return self.root / f"out-{case}-{sink}.jsonl"

    def sinks(self, case: str) -> list[str]:
        return ["a", "b"] if case == "two_sinks" else ["a"]

    def script(self, case: str) -> str:
        sinks = self.sinks(case)
        return "\n".join(
            [f'CREATE PAUSED SOURCE src TYPE file WITH path = "{self.src}", interval = {self.interval};',
             f"CREATE STREAM s AS {QUERY};"]
            + [f'CREATE SINK {k} TYPE file WITH path = "{self.out(case, k)}";' for k in sinks]
            + [f"INSERT INTO {k} FROM s;" for k in sinks] + ["RESUME SOURCE src;", ""])

    def _setup(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.src.write_text("".join(json.dumps({"id": i}) + "\n" for i in range(1, self.n + 1)))
        topologies = ""
        if "bql_file" in self.cases:
            (self.root / "tfile.bql").write_text(self.script("bql_file"))
            topologies = "topologies:\n  tfile:\n    bql_file: tfile.bql\n"
        port = free_port()
        config = self.root / "sensorbee.yaml"
        config.write_text(f'network:\n  listen_on: "127.0.0.1:{port}"\nlogging:\n  min_log_level: info\n'
                          f'{topologies}spark:\n  master: "local[2]"\n  data_dir: data\n')
        self.server = Server(config, port, self.root / "server.log")

    # ------------------------------------------------------------ REST helpers (None when unreachable)

    def _get(self, path: str) -> dict[str, Any] | None:
        try:
            r = httpx.get(self.server.api + path, timeout=10)
        except httpx.HTTPError:
            return None
        return r.json() if r.status_code == 200 else None

    def _source(self, case: str) -> dict[str, Any]:
        doc = self._get(f"/topologies/{CASES[case]}/sources/src") or {}
        return doc.get("source") or {}

    def _ended(self, case: str) -> bool:
        return self._source(case).get("state") == "stopped"

    def _sent(self, case: str) -> int:
        return ((self._source(case).get("status") or {}).get("output_stats") or {}).get("num_sent_total", 0)

    def _outputs(self, case: str) -> int:
        return len(lines(self.out(case, "a")))

    def _until(self, pred, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not pred():
            if time.monotonic() > deadline or self.server.proc.poll() is not None:
                return False
            time.sleep(0.05)
        return True

    # ------------------------------------------------------------ the run

    def run(self) -> dict[str, CaseResult]:
        self.log(f"crash run: seed={self.seed} kills={self.kills} n={self.n} cases={','.join(self.cases)}")
        self._setup()
        try:
            self.server.start(timeout=240)
            for case in self.cases:
                if case != "bql_file":
                    self._create(case)
            for k in range(self.kills):
                if self._kill(k):
                    self.server.start(timeout=240)
                self._after_restart()
            self._finish()
        finally:
            self.server.kill()
        for case in self.cases:
            self._check(case)
        return self.results

    def _create(self, case: str) -> None:
        name = CASES[case]
        r = httpx.post(self.server.api + "/topologies", json={"name": name}, timeout=60)
        assert r.status_code == 200, r.text
        r = httpx.post(f"{self.server.api}/topologies/{name}/queries", json={"queries": self.script(case)},
                       timeout=240)
        assert r.status_code == 200, r.text

    def _kill(self, k: int) -> bool:
        """One kill at a random point; True if it killed the server (False: only its JVM, restarted)."""
        point, target = self.rng.choice(self.points), self.rng.choice(self.cases)
        if point == "replan" and target in self.late:
            point = "mid_stream"
        self.aimed.append(point)
        t0 = time.monotonic()
        attach = None
        if point == "before_output":
            j = self.rng.randint(1, max(1, self.n // 10))
            self._until(lambda: self._sent(target) >= j or self._ended(target), 120)
        elif point == "mid_stream":
            have = self._outputs(target)
            j = self.rng.randint(have + 1, have + max(1, (self.n - have) * 3 // 4)) if have < self.n else 0
            self._until(lambda: self._outputs(target) >= j, 120)
        elif point == "source_end":
            self._until(lambda: self._ended(target), 180)
        elif point == "jvm":
            have = self._outputs(target)
            j = self.rng.randint(have + 1, have + max(1, (self.n - have) * 3 // 4)) if have < self.n else 0
            self._until(lambda: self._outputs(target) >= j and jvm_pid(self.server.proc.pid) is not None, 120)
            return self._kill_jvm(k, target, t0)
        else:
            attach = self._attach_late(target)
            attach.join(self.rng.uniform(0.0, 2.0))  # the kill lands at a random moment of the attach
        observed = self._observe()
        self.server.kill()
        self.log(f"kill {k + 1}: point={point} target={target} after {time.monotonic() - t0:.1f} s; "
                 + ", ".join(f"{c}: {o}" for c, o in observed.items()))
        for case, o in observed.items():
            self.results[case].kills.append(o)
        if attach is not None:
            attach.join(30)
        return True

    def _kill_jvm(self, k: int, target: str, t0: float) -> bool:
        """SIGKILL the Spark driver JVM; wait until the supervisor runs a new one and Spark is healthy."""
        old = jvm_pid(self.server.proc.pid)
        observed = self._observe()
        if old is not None:
            try:
                os.kill(old, signal.SIGKILL)
            except ProcessLookupError:  # it ended between the look-up and the kill: a new one must come
                pass
        self.log(f"kill {k + 1}: point=jvm (pid {old}) target={target} after {time.monotonic() - t0:.1f} s; "
                 + ", ".join(f"{c}: {o}" for c, o in observed.items()))
        for case, o in observed.items():
            self.results[case].kills.append("jvm+" + o)

        def healthy() -> bool:
            new = jvm_pid(self.server.proc.pid)
            if new is None or new == old or (old is not None and alive(old)):
                return False
            try:
                return httpx.get(self.server.api + "/runtime_status", timeout=10).status_code == 200
            except httpx.HTTPError:
                return False

        if not self._until(healthy, 300):
            raise AssertionError(f"Spark did not come back after the JVM kill:\n{self.server.tail(40)}")
        return False

    def _observe(self) -> dict[str, str]:
        out = {}
        for case in self.cases:
            n_out = self._outputs(case)
            label = ("before_output" if n_out == 0 else "source_end" if self._ended(case) else "mid_stream")
            if self.late.get(case) == "pending":
                label += "+replan"
            out[case] = f"{label}({n_out} out)"
        return out

    def _attach_late(self, case: str) -> threading.Thread:
        """Attach the late sink ``late`` to ``s`` of ``case`` in a thread (the kill may cut it short)."""
        self.late[case] = "pending"
        doc = self._get(f"/topologies/{CASES[case]}/streams/s") or {}
        self.late_after_end[case] = (doc.get("stream") or {}).get("state") == "stopped"
        bql = f'CREATE SINK late TYPE file WITH path = "{self.out(case, "late")}";\nINSERT INTO late FROM s;'

        def post():
            try:
                httpx.post(f"{self.server.api}/topologies/{CASES[case]}/queries", json={"queries": bql},
                           timeout=120)
            except httpx.HTTPError:
                pass

        t = threading.Thread(target=post, name=f"attach-{case}", daemon=True)
        t.start()
        return t

    def _after_restart(self) -> None:
        """A late sink whose INSERT INTO was not persisted before the kill (the server never answered it)
        is not retried; its file is not checked."""
        for case, state in list(self.late.items()):
            if state == "pending":
                statements = self.root / "data/topologies" / CASES[case] / "statements.bql"
                text = statements.read_text() if statements.exists() else ""
                self.late[case] = "persisted" if "INSERT INTO late FROM s" in text else "lost"

    def _finish(self) -> None:
        """Wait for every stream to stop and every sink to reach the last output; then delete the
        topologies (which flushes the sinks and stops every query)."""
        last = self.n

        def done(case: str) -> bool:
            doc = self._get(f"/topologies/{CASES[case]}/streams/s") or {}
            if (doc.get("stream") or {}).get("state") != "stopped":
                return False
            names = self.sinks(case) + (["late"] if self.late.get(case) == "persisted" else [])
            return all(self._complete(case, k, last) for k in names)

        if not self._until(lambda: all(done(c) for c in self.cases), 300):
            tail = [x for x in self.server.tail(400).splitlines() if "uvicorn.access" not in x]
            self.log("not every case completed in time:\n" + "\n".join(tail[-30:]))
            for case in self.cases:
                self.results[case].timed_out = not done(case)
        for case in self.cases:
            httpx.delete(f"{self.server.api}/topologies/{CASES[case]}", timeout=120)

    def _complete(self, case: str, sink: str, last: int) -> bool:
        rows = lines(self.out(case, sink))
        if sink == "late":
            if not rows:  # complete only if it attached after the stream's end
                return self.late_after_end.get(case, False)
            return rows[-1].get("m", 0) >= last
        return len(rows) >= last

    def _check(self, case: str) -> None:
        res, want = self.results[case], expected(self.n)
        for k in self.sinks(case):
            res.sinks[k] = check(lines(self.out(case, k)), want)
        state = self.late.get(case)
        if state == "persisted":
            res.sinks["late"] = check(lines(self.out(case, "late")), want, tail=True)
        elif state == "lost":
            rows = len(lines(self.out(case, "late")))
            res.notes.append(f"{UNPERSISTED_ATTACH} ({rows} rows)")


def summary(results: dict[str, CaseResult]) -> str:
    """One line per case: its kills and each sink's figures."""
    out = []
    for case, r in results.items():
        sinks = "; ".join(f"{k}: {c.got}/{c.want} lost {c.lost} dup {c.duplicated} wrong {c.wrong}"
                          + ("" if c.ordered else " UNORDERED") for k, c in r.sinks.items())
        out.append(f"{case:<10} {'ok ' if r.ok else 'LATE' if r.undelivered else 'BAD'} kills [{', '.join(r.kills)}] {sinks}"
                   + (f" ({'; '.join(r.notes)})" if r.notes else ""))
    return "\n".join(out)
