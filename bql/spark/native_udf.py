"""The native tier's JVM functions: built from ``java/``, loaded with the session.

The native tier (``native_stage``) computes a stage with Spark column expressions over the values one
JVM pass pulls out of each JSON line (``JsonScan.java`` says which lines and values it vouches for),
and its reader (``native_source``) may hand a file segment's lines to Spark as one descriptor row that
the executor expands: ``sbpy_file_fields`` (``FileFields.java``) into its lines with their JSON pass done
over the block's bytes, ``sbpy_file_lines`` (``FileLines.java``) into the lines alone, for
``sbpy_json_fields`` (``JsonFields.java``) to scan one by one. All are small Java UDFs: this module
compiles them once per source version with the JDK's ``javac`` into ``<cache>/sbpy-native-<hash>.jar``
(``$SBPY_CACHE_DIR`` or ``~/.cache/sbpy``), names the jar in ``spark.jars`` when a session is created
(``ServerContext.session_conf``: the driver and every executor load it) and registers the functions
(``register``). A session whose jar lacks ``FileLines`` (``file_lines_registered`` is False) keeps the
reader's older mode, the lines themselves shipped as Arrow strings; one that lacks ``FileFields`` scans
the lines one by one.

No ``javac`` (a JRE only), a failed build, or ``SBPY_NATIVE=0``: ``status()`` says why, the planner
keeps the stateless chains on the vectorized Python tier, and nothing else changes.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import zipfile
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger("sbpy.native")

FUNCTION = "sbpy_json_fields"
CLASS = "sbpy.spark.JsonFields"
LINES_FUNCTION = "sbpy_file_lines"
LINES_CLASS = "sbpy.spark.FileLines"
FIELDS_FUNCTION = "sbpy_file_fields"
FIELDS_BUILDER = "sbpy.spark.FileFields$Builder"  # a function builder, not a UDF (see FileFields.java)
DOUBLE_FUNCTION = "sbpy_json_double"
DOUBLE_CLASS = "sbpy.spark.JsonDouble"
KEY_FUNCTION = "sbpy_key_double"
KEY_CLASS = "sbpy.spark.KeyDouble"
SOURCES = [Path(__file__).with_name("java") / name
           for name in ("JsonScan.java", "JsonFields.java", "FileLines.java", "FileFields.java", "JsonDouble.java",
                         "KeyDouble.java")]
ENV = "SBPY_NATIVE"  # "0": never use the native tier


def cache_dir() -> Path:
    return Path(os.environ.get("SBPY_CACHE_DIR") or Path.home() / ".cache" / "sbpy")


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _spark_jars() -> list[Path]:
    """The Spark jars the sources compile against: the UDF interfaces, ``UTF8String`` (which needs
    Kryo's interfaces on the class path), Jackson's core (its Schubfach double formatting), and Catalyst
    with Scala's library (``FileFields``: a function builder making ``StaticInvoke`` expressions)."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    out = []
    for pattern in ("spark-sql-api_*.jar", "spark-unsafe_*.jar", "kryo*.jar", "jackson-core-*.jar",
                    "spark-catalyst_*.jar", "scala-library-*.jar"):
        found = sorted(jars.glob(pattern))
        if not found:
            raise FileNotFoundError(f"no {pattern} under {jars}")
        out.append(found[0])
    return out


@lru_cache(maxsize=1)
def _build() -> tuple[Path | None, str]:
    """``(jar, "")`` or ``(None, why not)``; builds at most once per process and source version."""
    digest = hashlib.sha256()
    for path in SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    jar = cache_dir() / f"sbpy-native-{digest.hexdigest()[:16]}.jar"
    if jar.exists():
        return jar, ""
    javac = _javac()
    if javac is None:
        return None, "no javac (the JDK's compiler) on this machine"
    try:
        classpath = os.pathsep.join(str(j) for j in _spark_jars())
        with tempfile.TemporaryDirectory(prefix="sbpy-native-") as tmp:
            done = subprocess.run([javac, "--release", "17", "-nowarn", "-cp", classpath, "-d", tmp,
                                   *(str(p) for p in SOURCES)],
                                  check=False, capture_output=True, text=True, timeout=120)
            if done.returncode != 0:
                return None, f"javac failed: {done.stderr.strip()[:400]}"
            jar.parent.mkdir(parents=True, exist_ok=True)
            part = jar.with_suffix(f".{os.getpid()}.part")
            with zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED) as z:
                for path in sorted(Path(tmp).rglob("*.class")):
                    z.write(path, path.relative_to(tmp).as_posix())
            os.replace(part, jar)  # another process may have built the same jar: either is fine
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"cannot build the native function: {e}"
    log.info("built %s", jar)
    return jar, ""


def status() -> tuple[bool, str]:
    """``(usable, why not)`` of the native tier on this machine."""
    if os.environ.get(ENV, "").strip() == "0":
        return False, f"{ENV}=0"
    jar, why = _build()
    return jar is not None, why


def jar_path() -> Path | None:
    """The jar to name in ``spark.jars`` (None: the native tier is off)."""
    ok, _why = status()
    return _build()[0] if ok else None


def with_jar(jars: str | None) -> str | None:
    """``spark.jars`` with the native jar added (the user's jars kept)."""
    jar = jar_path()
    if jar is None:
        return jars
    items = [j for j in (jars or "").split(",") if j.strip()]
    if str(jar) not in items:
        items.append(str(jar))
    return ",".join(items)


def register(spark: Any) -> bool:
    """Register ``sbpy_json_fields`` (and ``sbpy_file_lines`` when the session's jar has it) with a
    session whose ``spark.jars`` holds the jar; False if ``sbpy_json_fields`` is not available."""
    if jar_path() is None:
        return False
    from pyspark.sql.types import ArrayType, DoubleType, StringType

    try:
        spark.udf.registerJavaFunction(FUNCTION, CLASS, ArrayType(StringType()))
    except Exception as e:  # noqa: BLE001 - a session created without the jar: the tier stays off
        log.warning("the native function is not available in this session: %s", e)
        return False
    for name, cls, kind in ((LINES_FUNCTION, LINES_CLASS, ArrayType(StringType())),
                            (DOUBLE_FUNCTION, DOUBLE_CLASS, StringType()),
                            (KEY_FUNCTION, KEY_CLASS, DoubleType())):
        try:
            spark.udf.registerJavaFunction(name, cls, kind)
        except Exception as e:  # noqa: BLE001 - an older jar: an older reader mode, or no native tier
            log.warning("%s is not available in this session: %s", name, e)
    try:
        _register_builder(spark, FIELDS_FUNCTION, FIELDS_BUILDER)
    except Exception as e:  # noqa: BLE001 - an older jar or another Spark: the reader's older mode
        log.warning("%s is not available in this session: %s", FIELDS_FUNCTION, e)
    return True


def _register_builder(spark: Any, name: str, builder_class: str) -> None:
    """Register the JVM class ``builder_class`` (a ``Seq[Expression] => Expression``) as the session's
    temporary function ``name``, as ``registerJavaFunction`` registers a UDF's."""
    jvm = spark.sparkContext._jvm
    loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
    builder = jvm.java.lang.Class.forName(builder_class, True, loader).newInstance()
    spark._jsparkSession.sessionState().functionRegistry().createOrReplaceTempFunction(name, builder, "java_udf")


def registered(spark: Any) -> bool:
    """Whether the session knows ``sbpy_json_fields`` and the functions of the tier's arithmetic
    (``native_arith``: a chain may compile to them)."""
    return all(_exists(spark, name) for name in (FUNCTION, DOUBLE_FUNCTION, KEY_FUNCTION))


def file_lines_registered(spark: Any) -> bool:
    """Whether the session knows ``sbpy_file_lines`` (the native reader may then send descriptors)."""
    return _exists(spark, LINES_FUNCTION)


def file_fields_registered(spark: Any) -> bool:
    """Whether the session knows ``sbpy_file_fields`` (a block's lines then come with their JSON pass)."""
    return _exists(spark, FIELDS_FUNCTION)


def _exists(spark: Any, name: str) -> bool:
    try:
        return bool(spark.catalog.functionExists(name))
    except Exception:  # noqa: BLE001
        return False
