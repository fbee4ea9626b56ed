"""The shadow Spark home (``bql/spark/spark_home.py``): pyspark's home with bytecode in its Python zips,
used only while the bytecode matches the source beside it; built once, shared, and not used for another
Spark or when turned off."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from sbpy.bql.spark import spark_home as sh
from sbpy.bql.spark import worker_daemon as wd

MODULES = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "VALUE = 'from the zip'\n",
    "pkg/tests/test_x.py": "X = 1\n",
    "pkg/broken.py": "def (:\n",
}


def _zip(path: Path, files: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def _import_from(zip_path: Path, module: str) -> list[str]:
    """``[module.VALUE, module.__file__]`` imported in a fresh interpreter with only ``zip_path`` added."""
    code = f"import {module} as m; print(m.VALUE); print(m.__file__)"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(zip_path)},
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.splitlines()


def test_the_copy_has_bytecode_beside_each_module_but_tests_and_broken_ones(tmp_path):
    src = _zip(tmp_path / "src.zip", MODULES)
    added = sh.compiled_zip(src, tmp_path / "out.zip")
    names = zipfile.ZipFile(tmp_path / "out.zip").namelist()
    assert added == 2
    assert sorted(n for n in names if n.endswith(".pyc")) == ["pkg/__init__.pyc", "pkg/mod.pyc"]
    assert set(MODULES) <= set(names)  # every source stays
    value, origin = _import_from(tmp_path / "out.zip", "pkg.mod")
    assert value == "from the zip" and origin == f"{tmp_path / 'out.zip'}/pkg/mod.pyc"


def test_bytecode_that_does_not_match_its_source_is_not_used(tmp_path):
    sh.compiled_zip(_zip(tmp_path / "src.zip", MODULES), tmp_path / "out.zip")
    with zipfile.ZipFile(tmp_path / "out.zip") as z:
        stale = {n: z.read(n) for n in z.namelist()}
    stale["pkg/mod.py"] = b"VALUE = 'edited source'\n"  # the .pyc is the old source's
    with zipfile.ZipFile(tmp_path / "stale.zip", "w") as z:
        for name, data in stale.items():
            z.writestr(name, data)
    value, origin = _import_from(tmp_path / "stale.zip", "pkg.mod")
    assert value == "edited source" and origin.endswith("/pkg/mod.py")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SBPY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(sh.ENV, raising=False)
    monkeypatch.setenv("SPARK_HOME", str(sh.pyspark_home()))
    return tmp_path / "cache"


def test_the_shadow_is_the_real_home_but_its_zips(cache, monkeypatch):
    home = sh.pyspark_home()
    shadow = sh.shadow_home()
    assert shadow is not None and shadow.parent == cache and sh.is_shadow_of(shadow, home)
    assert (shadow / "jars").resolve() == home / "jars" and (shadow / "bin").resolve() == home / "bin"
    lib = shadow / "python" / "lib"
    zips = sorted(p.name for p in (home / "python" / "lib").glob("*.zip"))
    assert sorted(p.name for p in lib.glob("*.zip")) == zips and "pyspark.zip" in zips
    for name in zips:
        assert not (lib / name).is_symlink()
        assert any(n.endswith(".pyc") for n in zipfile.ZipFile(lib / name).namelist())
    # pyspark imports from it with the bytecode; the worker daemon reads the installed package instead
    py4j = next(str(lib / n) for n in zips if n.startswith("py4j"))
    code = "import pyspark.sql, pyspark; print(pyspark.__file__)"
    path = os.pathsep.join([str(lib / "pyspark.zip"), py4j])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True, env={**os.environ, "PYTHONPATH": path})
    assert out.stdout.strip() == f"{lib / 'pyspark.zip'}/pyspark/__init__.pyc"
    site = str(home.parent)
    assert wd.without_own_zips([str(lib / "pyspark.zip"), py4j, "/opt/app", site]) == ["/opt/app", site]
    # built once: the next call (SPARK_HOME now the shadow, as the server leaves it) finds it
    stamp = (lib / "pyspark.zip").stat().st_mtime_ns
    monkeypatch.setenv("SPARK_HOME", str(shadow))
    assert sh.shadow_home() == shadow and (lib / "pyspark.zip").stat().st_mtime_ns == stamp
    assert [p.name for p in cache.iterdir()] == [shadow.name]  # no temporary folder left


def test_not_used_for_another_spark_or_when_turned_off(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "another-spark"))
    assert sh.shadow_home() is None
    monkeypatch.setenv("SPARK_HOME", str(sh.pyspark_home()))
    monkeypatch.setenv(sh.ENV, "0")
    assert sh.shadow_home() is None
    assert not cache.exists()


def test_an_incomplete_shadow_is_not_taken_for_one(cache, tmp_path):
    (tmp_path / "half" / "python" / "lib").mkdir(parents=True)
    assert not sh.is_shadow_of(tmp_path / "half", sh.pyspark_home())
    (tmp_path / "half" / "python" / "lib" / wd.SHADOW_MARKER).write_text("/elsewhere")
    assert not sh.is_shadow_of(tmp_path / "half", sh.pyspark_home())


@pytest.mark.spark
def _fake_shadow(cache, name, real):
    lib = cache / name / "python" / "lib"
    lib.mkdir(parents=True)
    if real is not None:
        (lib / sh.MARKER).write_text(str(real))
    return cache / name


def test_building_a_shadow_deletes_those_of_installations_that_are_gone(cache, tmp_path):
    kept_home = tmp_path / "still-installed"
    kept_home.mkdir()
    orphan = _fake_shadow(cache, "spark-home-0000000000000001", tmp_path / "removed-venv")
    kept = _fake_shadow(cache, "spark-home-0000000000000002", kept_home)
    building = _fake_shadow(cache, "spark-home-0000000000000003.x1y2", None)  # another process's build
    shadow = sh.shadow_home()
    assert shadow is not None and sh.is_shadow_of(shadow, sh.pyspark_home())
    assert not orphan.exists()
    assert kept.exists() and building.exists()
    assert sh.prune_shadows(cache) == []  # the rest all stand for installed homes or are being built


def test_the_sessions_jvm_runs_with_the_shadow_home(spark):
    jvm_home = spark.sparkContext._jvm.java.lang.System.getenv("SPARK_HOME")
    assert jvm_home == os.environ["SPARK_HOME"]
    assert sh.is_shadow_of(Path(jvm_home), sh.pyspark_home())
