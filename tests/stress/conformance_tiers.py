"""Every visible conformance stream case with each execution tier forced (issue 10, scope item 7).

For each mode a fresh ``sbpy run`` on a loopback port gets the forcing environment, the black-box
runner (``../shared/conformance/sbcheck.py --kinds stream``) drives it, and the server's log says which
execution and tiers every query really ran (``query 'x' runs stateless (tiers: native-jvm): ...``):
the planner forces a mode only where it is allowed (a stateful chain forced ``stateless`` stays
``sequential``), so the table shows how many queries each mode actually moved.

    modes     default                          what the planner picks
              sequential                       SBPY_FORCE_EXECUTION=sequential (the reference kernel's tier)
              driver                           SBPY_FORCE_EXECUTION=driver
              vectorized                       SBPY_FORCE_EXECUTION=stateless, SBPY_NATIVE=0
              native                           SBPY_FORCE_EXECUTION=stateless (native where it compiles)

Each case's expected rows are what the sequential kernel produces (the in-process conformance tests
check that), so a mode passing every case gives the kernel's rows, tuple for tuple, in every case it
moved. It takes minutes per mode; it is a stress run, outside ``.ci/run``:

    .venv/bin/python tests/stress/conformance_tiers.py [--modes sequential,native] [-k pattern] [CASES]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from cluster import free_port

REPO = Path(__file__).resolve().parents[2]
SHARED = next((p for p in (REPO.parent / "shared", Path("/work/shared")) if (p / "conformance").exists()),
              REPO.parent / "shared")
MODES = {
    "default": {},
    "sequential": {"SBPY_FORCE_EXECUTION": "sequential"},
    "driver": {"SBPY_FORCE_EXECUTION": "driver"},
    "vectorized": {"SBPY_FORCE_EXECUTION": "stateless", "SBPY_NATIVE": "0"},
    "native": {"SBPY_FORCE_EXECUTION": "stateless"},
}
RUNS = re.compile(r"query '([^']*)' runs (\w+) \(tiers: ([^)]*)\)")


def _start(workdir: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log = workdir / "server.log"
    config = workdir / "sbpy.yaml"
    # the runner writes its input and output files in a temporary folder of its own
    config.write_text(f"network:\n  listen_on: 127.0.0.1:{port}\nlogging:\n  target: {log}\n  min_log_level: info\n"
                      f"storage:\n  file_roots: [{tempfile.gettempdir()}]\n"
                      f"spark:\n  data_dir: {workdir / 'data'}\n")
    proc = subprocess.Popen([sys.executable, "-m", "sbpy.server.cli.main", "run", "-c", str(config)],
                            stdout=open(workdir / "server.out", "w"), stderr=subprocess.STDOUT,
                            env={**os.environ, **env}, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}: {(workdir / 'server.out').read_text()[-2000:]}")
        try:
            if httpx.get(url + "/api/v1/runtime_status", timeout=2).status_code == 200:
                return proc, url, log
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("the server did not answer within 180 s")


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def run_mode(mode: str, cases: list[str], pattern: str | None) -> dict:
    """One mode: pass/fail counts, failing case names, and the queries per execution and tier."""
    workdir = Path(tempfile.mkdtemp(prefix=f"tiers-{mode}-"))
    try:
        proc, url, log = _start(workdir, MODES[mode])
        report = workdir / "report.json"
        try:
            cmd = [sys.executable, str(SHARED / "conformance" / "sbcheck.py"), "--server", url, "--kinds", "stream",
                   "--json", str(report), "--sbpy", f"{sys.executable} -m sbpy.server.cli.main", *cases]
            if pattern:
                cmd += ["-k", pattern]
            t0 = time.monotonic()
            subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, check=False)
            seconds = time.monotonic() - t0
        finally:
            _stop(proc)
        results = json.loads(report.read_text())
        rows = results["cases"] if isinstance(results, dict) else results
        ran = collections.Counter()
        for text in (log.read_text(errors="replace"), (workdir / "server.out").read_text(errors="replace")):
            for _query, execution, tiers in RUNS.findall(text):
                ran[f"{execution} [{tiers}]"] += 1
        return {"mode": mode, "passed": sum(1 for r in rows if r["ok"]),
                "failed": [f"{r['file']}::{r['name']}: {r['why']}" for r in rows if not r["ok"]],
                "queries": dict(ran), "seconds": round(seconds)}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="*", default=[str(SHARED / "conformance" / "cases")])
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("-k", dest="pattern")
    a = ap.parse_args(argv)
    failed = 0
    for mode in a.modes.split(","):
        r = run_mode(mode, a.cases, a.pattern)
        failed += len(r["failed"])
        print(f"{mode}: {r['passed']} passed, {len(r['failed'])} failed in {r['seconds']} s "
              f"(load {os.getloadavg()[0]:.1f}); queries: "
              + "; ".join(f"{k}: {v}" for k, v in sorted(r["queries"].items())), flush=True)
        for line in r["failed"]:
            print("  FAIL " + line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
