"""A Spark home whose Python zips carry bytecode, for the Python processes the driver JVM starts.

The JVM starts Python processes of its own — the streaming source runner of the journal, the driver
worker of each ``transformWithState`` operator, the daemon that plans a Python data source read — with
``$SPARK_HOME/python/lib/pyspark.zip`` (and py4j's zip) first on their path. Those zips hold sources
only, and zipimport keeps no bytecode: every such process compiles pyspark again. In a py-spy profile of
B5 (four query starts) that compiling was ~6.5 s of CPU, the largest part of those processes' time, and
a query's first micro-batch waits for it.

``shadow_home()`` gives a folder that is pyspark's own home for everything (each entry a symlink to the
installed package's) except ``python/lib``, whose zips are copies with a ``.pyc`` next to each ``.py``:
hash-checked bytecode (``py_compile``'s ``CHECKED_HASH``), which zipimport uses only while it matches
the source beside it in the same zip and was compiled for the interpreter that reads it; any other
interpreter compiles the source as before (modules under ``tests/`` get none: nothing runs them). The
server (``ServerContext``) launches the JVM with ``SPARK_HOME`` set to it; the worker daemon reads
pyspark from the installed package instead of its zip, as it does for the real home's. It is built
once per pyspark installation and interpreter under the cache folder (``$SBPY_CACHE_DIR`` or
``~/.cache/sbpy``), into a temporary folder renamed into place, so concurrent servers share it; building
one deletes the shadows of installations that are gone (``prune_shadows``). Not used
when ``SPARK_HOME`` names another Spark, or with ``SBPY_SPARK_HOME=0``.
"""
from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import py_compile
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

from .worker_daemon import SHADOW_MARKER as MARKER  # in the shadow's python/lib: the real home it stands for
from .worker_daemon import shadow_of

log = logging.getLogger("sbpy.spark")

ENV = "SBPY_SPARK_HOME"  # "0": launch the JVM with pyspark's own home
FORMAT = "1"  # the layout below; a new one builds a new folder


def pyspark_home() -> Path:
    """The installed pyspark package's folder (its own Spark home: jars, bin, python/lib)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pyspark is not installed")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def shadow_home() -> Path | None:
    """The shadow of the installed pyspark's home, built if needed; None when it is not to be used (see
    the module doc) or cannot be built (the reason is logged; the JVM then starts as before)."""
    if os.environ.get(ENV) == "0":
        return None
    home = pyspark_home()
    current = os.environ.get("SPARK_HOME")
    if current and Path(current).resolve() != home and not is_shadow_of(Path(current), home):
        return None
    lib = home / "python" / "lib"
    zips = sorted(lib.glob("*.zip"))
    digest = hashlib.sha256(f"{FORMAT}\0{home}\0{sys.implementation.cache_tag}\0{sys.version}".encode())
    for z in zips:
        st = z.stat()
        digest.update(f"\0{z.name}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    from .native_udf import cache_dir

    target = cache_dir() / f"spark-home-{digest.hexdigest()[:16]}"
    if is_shadow_of(target, home):
        return target
    try:
        _build(home, zips, target)
    except (OSError, zipfile.BadZipFile) as e:
        log.warning("cannot prepare a Spark home with compiled Python zips (%s); using %s", e, home)
        return None
    prune_shadows(target.parent)
    return target


def prune_shadows(cache: Path) -> list[Path]:
    """Delete the shadows in ``cache`` whose real home is gone (each install of pyspark — a new virtual
    environment, a fresh clone's — builds its own, ~8 MB, and nothing else would ever free it); returns
    them. Run when a new shadow has been built. A shadow is deleted only when its marker names a folder
    that no longer exists: no server can run from it (its links point into that folder). Half-built ones
    (no marker yet) are another process's build in progress and stay."""
    gone = []
    for folder in sorted(cache.glob("spark-home-*")):
        real = shadow_of(str(folder / "python" / "lib"))
        if real is None or os.path.isdir(real):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        gone.append(folder)
    if gone:
        log.info("removed %d Spark home shadow(s) of pyspark installations that are gone", len(gone))
    return gone


def is_shadow_of(folder: Path, home: Path) -> bool:
    """Whether ``folder`` is a complete shadow of ``home`` (resolved; its marker, written last, names it)."""
    return shadow_of(str(folder / "python" / "lib")) == str(home)


def _build(home: Path, zips: list[Path], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        tmp.chmod(0o755)
        for entry in home.iterdir():
            if entry.name != "python":
                (tmp / entry.name).symlink_to(entry)
        (tmp / "python" / "lib").mkdir(parents=True)
        for entry in (home / "python").iterdir():
            if entry.name != "lib":
                (tmp / "python" / entry.name).symlink_to(entry)
        for entry in (home / "python" / "lib").iterdir():
            if entry.suffix != ".zip":
                (tmp / "python" / "lib" / entry.name).symlink_to(entry)
        for z in zips:
            compiled_zip(z, tmp / "python" / "lib" / z.name, target / "python" / "lib" / z.name)
        (tmp / "python" / "lib" / MARKER).write_text(str(home))
        try:
            os.rename(tmp, target)
        except OSError:  # another process renamed its copy first: use that one
            if not is_shadow_of(target, home):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("prepared %s (pyspark's Python zips with bytecode)", target)


def compiled_zip(source: Path, dest: Path, final: Path | None = None) -> int:
    """Copy the zip ``source`` to ``dest`` adding, for each ``x.py`` outside ``tests/`` folders that
    compiles, ``x.pyc`` beside it (hash-checked against that source; its code named as zipimport names
    the source, ``final/x.py``, ``final`` being where the zip will be read: ``dest`` by default);
    returns how many were added."""
    shown = final or dest
    added = 0
    with (zipfile.ZipFile(source) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out,
          tempfile.TemporaryDirectory(prefix="sbpy-pyc-") as tmp, warnings.catch_warnings()):
        warnings.simplefilter("ignore")  # the sources' own SyntaxWarnings: shown when they are imported
        names = set(src.namelist())
        py, pyc = Path(tmp) / "m.py", Path(tmp) / "m.pyc"
        for info in src.infolist():
            data = src.read(info)
            out.writestr(info, data)
            name = info.filename
            if not name.endswith(".py") or name + "c" in names or "/tests/" in f"/{name}":
                continue
            py.write_bytes(data)
            try:
                py_compile.compile(str(py), cfile=str(pyc), dfile=f"{shown}{os.sep}{name}", doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
            except py_compile.PyCompileError:
                continue  # left to the interpreter that imports it, as before
            out.writestr(zipfile.ZipInfo(name + "c", info.date_time), pyc.read_bytes(),
                         compress_type=zipfile.ZIP_DEFLATED)
            added += 1
    return added
