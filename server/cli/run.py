"""``sbpy run [-c FILE] [--listen HOST:PORT]``: start the server (uvicorn) on ``network.listen_on``.

The config comes from ``-c``, else ``$SENSORBEE_CONFIG``, else the defaults; ``--listen`` replaces
its ``network.listen_on`` (``:PORT`` listens on every interface). Logging follows the
``logging`` section (target stderr, stdout or a file; ``min_log_level``); ``--log-format json``
writes JSON lines, and Spark's own log lines take the same way (``sbpy.server.logging_setup``). A
topology of the config whose ``bql_file`` fails aborts startup with a non-zero exit code.
"""
from __future__ import annotations

import argparse
import sys

from pydantic import ValidationError

from ..config import Config, ConfigError, NetworkConfig, load_config


def configure_logging(config: Config, fmt: str | None = None) -> None:
    """One handler and one format for Python's and Spark's log lines (``sbpy.server.logging_setup``)."""
    from ..logging_setup import configure_logging as configure
    from ..logging_setup import log_format

    configure(config, log_format(fmt))


# How long a Python thread holds the GIL before another may take it (CPython's default: 5 ms). The server
# process runs driver-side stages (``driver_query``: Timeplus windows, small states, UDS calls) next to
# the REST handlers; a REST request needs several GIL hand-offs, so with 5 ms slices a GET waited ~50 ms
# (p50) behind a busy micro-batch, with 1 ms ~11 ms, at the same throughput (README "Session 14").
SWITCH_INTERVAL_S = 0.001


def serve(config: Config) -> int:
    """Run the server until interrupted; 0 after a clean shutdown, 1 if startup failed."""
    import uvicorn

    from ..app import create_app

    sys.setswitchinterval(SWITCH_INTERVAL_S)
    app = create_app(config, warm_up=config.spark.warm_up)
    server = uvicorn.Server(uvicorn.Config(
        app, host=config.network.host, port=config.network.port, log_config=None,
        log_level=config.logging.level, lifespan="on", timeout_graceful_shutdown=5,
    ))
    server.run()
    return 0 if server.started else 1


def with_listen(config: Config, listen: str) -> Config:
    """``config`` listening on ``listen`` (``host:port`` or ``:port``); ``ConfigError`` if malformed."""
    try:
        network = NetworkConfig.model_validate({**config.network.model_dump(), "listen_on": listen})
    except ValidationError as err:
        raise ConfigError(f"--listen: {err.errors()[0]['msg'].removeprefix('Value error, ')}") from None
    return config.model_copy(update={"network": network})


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
        if args.listen is not None:
            config = with_listen(config, args.listen)
    except ConfigError as err:
        print(f"sbpy run: {err}", file=sys.stderr)
        return 1
    try:
        configure_logging(config, args.log_format)
    except ValueError as err:
        print(f"sbpy run: {err}", file=sys.stderr)
        return 1
    return serve(config)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``run``."""
    parser = subparsers.add_parser("run", help="run the server",
                                   description="Serve the REST API and the topologies of the config.")
    parser.add_argument("-c", "--config", default=None,
                        help="the config file (default: $SENSORBEE_CONFIG, else built-in defaults)")
    parser.add_argument("-l", "--listen", default=None, metavar="HOST:PORT",
                        help="listen here instead of the config's network.listen_on (':PORT': every interface)")
    parser.add_argument("--log-format", choices=("text", "json"), default=None,
                        help="log lines as text or JSON lines (default: $SBPY_LOG_FORMAT, else text)")
    parser.set_defaults(func=run)
