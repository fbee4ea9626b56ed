"""``sbpy runfile [-c FILE] [-t NAME] [-s UDS_LIST] FILE.bql``: run a BQL file in-process.

Like ``sensorbee runfile``: every source is created PAUSED (rewindable sources are rejected), the
statements run in order, then all sources are resumed; the command waits until every source has
stopped and every query has drained, stops the topology (flushing the sinks) and exits 0. A failing
statement exits 1 with ``FILE:LINE: message``. The topology name defaults to the file's base name.
``-s a,b`` saves the user-defined states ``a`` and ``b`` (tag ``default``) after the topology stopped,
``-s ""`` saves every state that supports saving; without ``-s`` nothing is saved. The config's
``plugins`` (and installed plugins) are loaded and ``storage.uds`` says where states are saved, so
``sbpy runfile -t twitter -c sensorbee.yaml -s '' train.bql`` prepares models a server loads later.

Before Spark starts the file's names are resolved as ``sbpy check`` does (functions, UDSFs, types,
streams, sources, sinks, states in statement order): a file with an unknown name exits 1 at once
with ``FILE:LINE:COL: message`` and the line with a caret.

While the sources run, stderr shows the progress (``sbpy.server.cli.progress``): on a terminal a
block with the tuples read and written per node, their rates and the elapsed time, redrawn in
place; otherwise a plain line every 5 s. The summary (totals and average rates per node) follows
when the file is done. Log records at WARNING and above (or the config's ``min_log_level`` if
higher), Spark's routed into Python's logging (``sbpy.server.logging_jvm``), print above the block.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sbpy.bql import ast
from sbpy.bql.errors import BQLError, format_error


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "runfile", help="run a BQL file until its sources stop",
        description="Run the statements of a BQL file in a new in-process topology, resume its sources\n"
                    "and wait until they stopped and every query drained; optionally save states at the end.")
    parser.add_argument("-c", "--config", default=None, help="the config file (default: $SENSORBEE_CONFIG)")
    parser.add_argument("-t", "--topology", default=None, help="topology name (default: the file's base name)")
    parser.add_argument("-s", "--save-uds", default=None, help="comma list of states to save at the end")
    parser.add_argument("file", help="the BQL file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sbpy.bql.parser import parse_script
    from sbpy.plugins.loader import PluginLoadError, load_all

    from ..config import ConfigError, load_config
    from ..uds_storage import storage_from_config

    path = Path(args.file)
    try:
        script = path.read_text(encoding="utf-8")
    except OSError as e:
        print(f"sbpy runfile: cannot read '{path}': {e.strerror}", file=sys.stderr)
        return 1
    try:
        config = load_config(args.config)
    except ConfigError as e:
        print(f"sbpy runfile: {e}", file=sys.stderr)
        return 1
    name = args.topology or path.stem
    try:
        registries = load_all(config.plugins, folders=config.plugin_folders)
        storage = storage_from_config(config)
    except (PluginLoadError, OSError, ValueError) as e:
        print(f"sbpy runfile: {e}", file=sys.stderr)
        return 1
    try:
        statements = parse_script(script)
    except BQLError as e:
        print(f"{path}: {format_error(e, script)}", file=sys.stderr)
        return 1
    if unresolved_names(statements, script, registries, str(path)):
        return 1
    from ..context import ServerContext  # these import Spark: only once the file is known to be sound
    from ..script_front import check_statement
    from ..topology import Topology
    from .progress import Progress, counts_of

    progress = Progress(sys.stderr, name, tty=sys.stderr.isatty())
    restore_logging = configure_logging(progress, config)
    try:
        progress.note(f"{len(statements)} statements; starting Spark ({config.spark.master})")
        with tempfile.TemporaryDirectory(prefix="sbpy-runfile-") as data_dir:
            ctx = ServerContext(data_dir=data_dir, master=config.spark.master,
                                conf=dict(config.spark.conf or {}), config=config)
            ctx.uds_storage = storage
            ctx.warm_up()
            topology = Topology(name, ctx)
            code = 0
            try:
                for parsed in statements:
                    line = script.count("\n", 0, parsed.offset) + 1
                    try:
                        stmt = parsed.stmt
                        if isinstance(stmt, (ast.Select, ast.SelectUnion)):
                            raise BQLError("SELECT statements cannot be used in runfile")
                        if isinstance(stmt, ast.CreateSource):
                            parsed = dataclasses.replace(parsed, stmt=dataclasses.replace(stmt, paused=True))
                        result = topology.execute(check_statement(parsed))
                        if isinstance(stmt, ast.CreateSource) and topology.sources[stmt.name.lower()].rewindable:
                            raise BQLError("rewindable sources cannot be used in runfile")
                        if "result" in result:
                            print(result["result"])
                    except BQLError as e:
                        print(f"{path}:{line}: {format_error(e, script)}", file=sys.stderr)
                        return 1
                progress.note("statements done; resuming the sources")
                progress.resumed()
                for source in list(topology.sources.values()):
                    source.resume()
                while not _finished(topology):
                    progress.update(counts_of(topology.node_statuses()))
                    time.sleep(0.05)
                topology.stop(keep_states=True)
                progress.finish(counts_of(topology.node_statuses()))
                if args.save_uds is not None:
                    code = save_states(topology, args.save_uds)
            finally:
                topology.stop()
                ctx.close()
        return code
    finally:
        restore_logging()  # an in-process caller (tests, an embedding program) gets its handlers back


def configure_logging(progress: Any, config: Any) -> Callable[[], None]:
    """Log records at WARNING and above (or the config's level if higher) to stderr above the
    progress block, in ``$SBPY_LOG_FORMAT`` (text by default); route the Spark JVM's output there.
    Returns what puts the root logger's handlers and level back."""
    import logging

    from .. import logging_jvm
    from ..logging_setup import formatter, log_format
    from .progress import ProgressLogHandler

    handler = ProgressLogHandler(progress)
    handler.setFormatter(formatter(log_format(None)))
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    root.handlers[:] = [handler]
    root.setLevel(max(logging.WARNING, config.logging.level))
    logging_jvm.install()

    def restore() -> None:
        root.handlers[:] = handlers
        root.setLevel(level)

    return restore


def unresolved_names(statements: list, script: str, registries: Any, filename: str) -> bool:
    """Resolve the names of the parsed ``statements`` as ``sbpy check`` does and print each problem
    to stderr; True if any is an error (then nothing must run)."""
    from sbpy.bql.analyzer.resolve import ScriptScope

    from .catalog import catalog_of
    from .check import resolve_statement

    scope = ScriptScope(catalog_of(registries))
    findings = [f for ps in statements for f in resolve_statement(scope, ps, script)]
    for f in findings:
        print(f.render(filename, script), file=sys.stderr)
    return any(not f.warning for f in findings)


def save_states(topology, names: str) -> int:
    """SAVE STATE each of the comma list ``names`` (``""``: every state that supports saving)."""
    states = topology.states
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    try:
        if not wanted:
            saved = states.save_all()
        else:
            for n in wanted:
                states.save(ast.SaveState(name=n))
            saved = [n.lower() for n in wanted]
    except BQLError as e:
        print(f"sbpy runfile: cannot save states: {e.message}", file=sys.stderr)
        return 1
    for n in saved:
        print(f"sbpy runfile: saved state '{n}' of topology '{topology.name}'", file=sys.stderr)
    return 0


def _finished(topology) -> bool:
    """Every source stopped and every query drained (its input ended) or failed."""
    if not topology.all_sources_stopped():
        return False
    return all(c.done or c.stopped for c in list(topology.consumers.values()))
