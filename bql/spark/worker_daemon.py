"""The Python worker daemon of sbpy's Spark sessions (``spark.python.daemon.module``): pyspark's own
daemon, started with the worker's own code already imported, so a forked worker does not import it.

Spark starts one daemon per executor (``python -m <daemon module> pyspark.worker``) and forks a worker
from it whenever a Python task finds no idle one — a transformWithState operator's runner, a Python data
source's reader, a ``mapInPandas``. pyspark's daemon imports the worker module only after each fork,
because pandas and pyarrow start threads when imported and a process must not fork while it has threads.
And the worker imports pyspark from Spark's ``python/lib/pyspark.zip``, which holds sources only:
zipimport compiles every module again in every worker (``import pyspark.worker``: ~470 ms from the zip,
~80 ms from the installed package's bytecode, on the 2-core machine). A keyed query's run forks tens of
workers: B6's keyed tumble spent ~40 % of its Python workers' time importing (README "Session 20").

This daemon, before it forks anything:

1. reads pyspark from the installed package when Spark's zip is that package's own copy (the zip sits
   inside the package: the same files, so the same protocol), not when ``SPARK_HOME`` is another Spark;
2. imports ``PRELOAD`` — the worker module and the pyspark modules it imports —, ``PRELOAD_SBPY``, the
   modules of sbpy's Spark work that workers unpickle or build (they import numpy, which starts no thread
   under the ``OMP_NUM_THREADS=1`` Spark gives its Python workers), and ``PRELOAD_ARROW``: pandas,
   pyarrow and the pyspark modules that convert batches with them (~300 ms a worker otherwise: a B5
   profile showed pandas' import as the largest part of its workers' time). pyarrow's bundled jemalloc
   starts a background thread when the library loads, so the daemon first sets
   ``JE_ARROW_MALLOC_CONF=background_thread:false`` unless the environment sets it (Arrow's default pool
   is mimalloc; jemalloc then purges inline, no thread);
3. forgets the finders the interpreter cached for the zips it dropped (``forget_zip_finders``: each
   task's ``importlib.invalidate_caches`` would read their directories again);
4. checks that the process still runs one thread (``threads``). Should a preloaded module ever start one,
   it says so on stderr and re-executes itself preloading less (``LEVEL_ENV``: ``all`` → ``sbpy`` →
   ``pyspark`` → ``none``, the last being pyspark's daemon exactly), so no worker forks from a process
   with threads. The level it serves with stays in the environment its workers inherit.

Then it runs pyspark's ``daemon.manager``, which forks the workers: each starts with those modules.
"""
from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder

PRELOAD = ("pyspark.daemon", "pyspark.worker")
PRELOAD_SBPY = ("sbpy.bql.spark.keyed_query", "sbpy.bql.spark.state_function", "sbpy.bql.spark.stateless_source",
                "sbpy.bql.spark.native_source", "sbpy.bql.spark.journal_source", "sbpy.bql.spark.routed_source",
                "sbpy.bql.parser", "sbpy.bql.analyzer", "sbpy.bql.runtime.match")
PRELOAD_ARROW = ("pandas", "pyarrow", "pyspark.sql.pandas.serializers",
                 "pyspark.sql.streaming.stateful_processor_util", "pyspark.sql.worker.plan_data_source_read")
LEVEL_ENV = "SBPY_WORKER_PRELOAD"  # what the daemon preloads: all (default), sbpy, pyspark, none
LESS = {"all": "sbpy", "sbpy": "pyspark", "pyspark": "none"}
LEVELS = {"all": PRELOAD + PRELOAD_SBPY + PRELOAD_ARROW, "sbpy": PRELOAD + PRELOAD_SBPY, "pyspark": PRELOAD}
JEMALLOC_ENV = "JE_ARROW_MALLOC_CONF"  # pyarrow's bundled jemalloc reads its options from here
MODULE = "sbpy.bql.spark.worker_daemon"
SHADOW_MARKER = "sbpy-shadow-of"  # in a shadow home's python/lib (spark_home): the real home it stands for


def threads() -> int:
    """This process's OS threads (``/proc/self/task``; 1 where it cannot be read)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def installed_dir(package: str, path: list[str]) -> str | None:
    """The folder of ``package`` found on ``path`` outside any zip, or None."""
    spec = PathFinder.find_spec(package, [p for p in path if not p.endswith(".zip")])
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.realpath(next(iter(spec.submodule_search_locations)))


def without_own_zips(path: list[str]) -> list[str]:
    """``path`` without the zips that are the installed pyspark package's own — its ``python/lib`` copy of
    pyspark (and of py4j when py4j is installed too), whether read from the package or from sbpy's shadow
    of its home (``spark_home``: a folder whose marker names the package) —: they then import from the
    packages, with their bytecode. Zips of another Spark (a ``SPARK_HOME`` of its own) stay."""
    home = installed_dir("pyspark", path)
    if home is None:
        return list(path)
    inside = home + os.sep
    py4j = installed_dir("py4j", path) is not None

    def own(p: str) -> bool:
        if not p.endswith(".zip"):
            return False
        name = os.path.basename(p)
        if not (name == "pyspark.zip" or (py4j and name.startswith("py4j"))):
            return False
        return os.path.realpath(p).startswith(inside) or shadow_of(os.path.dirname(p)) == home

    return [p for p in path if not own(p)]


def forget_zip_finders(path: list[str]) -> None:
    """Drop the cached finders of the zips no longer on ``path`` (the interpreter made them while it looked
    for this module): ``importlib.invalidate_caches`` — which pyspark's worker calls for every task
    (``setup_spark_files``) — makes each cached zip finder read its zip's directory again, ~12 ms a task
    for the shadow home's pyspark.zip (with its bytecode) on the 2-core machine."""
    for key in [k for k in sys.path_importer_cache if k.endswith(".zip") and k not in path]:
        del sys.path_importer_cache[key]


def shadow_of(folder: str) -> str | None:
    """The real home (resolved) named by the marker in ``folder`` (a shadow home's ``python/lib``), or
    None."""
    try:
        with open(os.path.join(folder, SHADOW_MARKER), encoding="utf-8") as f:
            return os.path.realpath(f.read())
    except OSError:
        return None


def main() -> None:
    level = os.environ.get(LEVEL_ENV, "all")
    if level in LESS:
        sys.path[:] = without_own_zips(sys.path)
        forget_zip_finders(sys.path)
        if level == "all":
            os.environ.setdefault(JEMALLOC_ENV, "background_thread:false")
        for name in LEVELS[level]:
            __import__(name)
    if threads() != 1 and level in LESS:  # a preloaded module started a thread: fork nothing from here
        print(f"sbpy worker daemon: {threads()} threads after preloading ({LEVEL_ENV}={level}); "
              f"preloading less ({LESS[level]})", file=sys.stderr, flush=True)
        os.execve(sys.executable, [sys.executable, "-m", MODULE, *sys.argv[1:]],
                  {**os.environ, LEVEL_ENV: LESS[level]})
    os.environ[LEVEL_ENV] = level  # what the workers it forks started with
    serve()


def serve() -> None:
    """pyspark's daemon loop: forks a worker per connection from the JVM."""
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
