"""The Python worker daemon (``bql/spark/worker_daemon.py``): which zips it drops from the path, that its
preloads leave one thread (or that it preloads less), and that Spark's workers fork from it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from sbpy.bql.spark import worker_daemon as wd

HOME = Path(pyspark.__file__).resolve().parent
OWN_ZIPS = [str(HOME / "python" / "lib" / "pyspark.zip"), *map(str, (HOME / "python" / "lib").glob("py4j-*.zip"))]


def test_the_installed_packages_own_zips_leave_the_path():
    site = str(HOME.parent)
    path = [*OWN_ZIPS, "/elsewhere/spark/python/lib/pyspark.zip", "/opt/app", site]
    assert OWN_ZIPS and all(Path(z).is_file() for z in OWN_ZIPS)
    assert wd.without_own_zips(path) == ["/elsewhere/spark/python/lib/pyspark.zip", "/opt/app", site]


def test_nothing_leaves_without_an_installed_pyspark(tmp_path):
    path = [*OWN_ZIPS, str(tmp_path)]  # pyspark only inside the zips: they stay
    assert wd.without_own_zips(path) == path


def _daemon_probe(level: str | None, extra: str = "") -> subprocess.CompletedProcess:
    """Run the daemon's ``main`` up to ``serve`` (replaced by a probe printing the thread count, where pyspark
    came from and whether sbpy's modules are loaded) in a fresh interpreter with Spark's worker path."""
    code = (
        "import os, sys\n"
        f"{extra}\n"
        "from sbpy.bql.spark import worker_daemon as wd\n"
        "wd.serve = lambda: print('probe', wd.threads(), __import__('pyspark').__file__,"
        " 'sbpy.bql.spark.keyed_query' in sys.modules, 'pandas' in sys.modules, flush=True)\n"
        "wd.main()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != wd.LEVEL_ENV}
    env["PYTHONPATH"] = os.pathsep.join(OWN_ZIPS)
    env["OMP_NUM_THREADS"] = "1"
    if level is not None:
        env[wd.LEVEL_ENV] = level
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_the_daemon_preloads_from_the_package_and_forks_with_one_thread():
    out = _daemon_probe(None)
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("probe")]
    _, threads, origin, sbpy_loaded, pandas_loaded = line.split()
    assert threads == "1" and sbpy_loaded == "True" and pandas_loaded == "True"
    assert not origin.endswith(".zip/pyspark/__init__.py") and Path(origin).is_relative_to(HOME)


def test_the_dropped_zips_leave_no_cached_finder():
    """pyspark's worker calls ``importlib.invalidate_caches`` for every task, which reads the directory of
    every zip with a cached finder: the daemon keeps none for the zips it dropped (the interpreter made
    them while it looked for the daemon's module on Spark's worker path)."""
    out = _daemon_probe(None, extra="import atexit; atexit.register(lambda: print('cached', *sorted("
                                    "k for k in sys.path_importer_cache if k.endswith('.zip'))))")
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("cached")]
    assert not set(line.split()[1:]) & set(OWN_ZIPS)


@pytest.mark.parametrize(("level", "sbpy_loaded"), [("sbpy", "True"), ("pyspark", "False"), ("none", "False")])
def test_the_levels_preload_less(level, sbpy_loaded):
    out = _daemon_probe(level)
    assert out.returncode == 0, out.stderr
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("probe")]
    _, threads, _, sbpy, pandas_loaded = line.split()
    assert (threads, sbpy, pandas_loaded) == ("1", sbpy_loaded, "False")  # one thread; no pandas


def test_pyarrows_jemalloc_thread_is_what_the_daemon_turns_off():
    """The reason for ``JE_ARROW_MALLOC_CONF``: with jemalloc's own options, importing pandas and pyarrow
    leaves a background thread, and the daemon falls back to preloading less than pandas."""
    out = _daemon_probe(None, extra=f"os.environ[{wd.JEMALLOC_ENV!r}] = 'background_thread:true'\n"
                                    "os.execve = lambda exe, argv, env: (print('exec', env['SBPY_WORKER_PRELOAD'],"
                                    " flush=True), sys.exit(0))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "exec sbpy"
    assert "preloading less (sbpy)" in out.stderr


def test_a_thread_started_by_a_preload_makes_it_preload_less():
    """A module that starts a thread when imported (stood in by a thread started before ``main``): the
    daemon re-executes itself one level lower until no preload is left, and says so on stderr."""
    code = ("import threading, time, sys, os\n"
            "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
            "os.execv = os.execve = lambda exe, argv, env=None: (print('exec', env and env.get("
            f"{wd.LEVEL_ENV!r}), argv[1:3], flush=True), sys.exit(0))\n"
            "from sbpy.bql.spark import worker_daemon as wd\n"
            "wd.main()\n")
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "exec sbpy ['-m', 'sbpy.bql.spark.worker_daemon']"
    assert "preloading less (sbpy)" in out.stderr


@pytest.mark.spark
def test_sparks_workers_fork_from_the_daemon(spark):
    def where_the_worker_runs(frames):  # defined here: pickled by value (the test module is not on the path)
        """The worker's parent's command line, where its pyspark came from, whether sbpy's modules were
        loaded before the UDF ran."""
        import os as _os
        import sys as _sys

        import pandas as pd

        with open(f"/proc/{_os.getppid()}/cmdline", "rb") as f:
            parent = f.read().replace(b"\0", b" ").decode()
        for _ in frames:
            pass
        yield pd.DataFrame({"parent": [parent], "pyspark": [_sys.modules["pyspark"].__file__],
                            "preloaded": ["sbpy.bql.spark.keyed_query" in _sys.modules
                                          and _os.environ.get("SBPY_WORKER_PRELOAD") == "all"]})

    df = spark.range(4, numPartitions=2).mapInPandas(where_the_worker_runs, "parent string, pyspark string, "
                                                                             "preloaded boolean")
    rows = df.collect()
    assert len(rows) == 2
    for row in rows:
        assert "-m sbpy.bql.spark.worker_daemon" in row.parent
        assert Path(row.pyspark).is_relative_to(HOME) and ".zip" not in row.pyspark
        assert row.preloaded
