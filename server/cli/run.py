"""``sbpy run [-c FILE]``: start the server (uvicorn) on ``network.listen_on``.

The config comes from ``-c``, else ``$SENSORBEE_CONFIG``, else the defaults. Logging follows the
``logging`` section (target stderr, stdout or a file; ``min_log_level``). A topology of the config
whose ``bql_file`` fails aborts startup with a non-zero exit code.
"""
from __future__ import annotations

import argparse
import logging
import sys

from ..config import Config, ConfigError, load_config

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class _HideStartupTraceback(logging.Filter):
    """uvicorn logs the lifespan's traceback; a ``StartupError`` is already logged in plain words."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "sbpy.server.manager.StartupError" not in str(record.msg)


def configure_logging(config: Config) -> None:
    """Send log records at ``min_log_level`` and above to the configured target."""
    target = config.logging.target
    if target == "stderr":
        handler: logging.Handler = logging.StreamHandler(sys.stderr)
    elif target == "stdout":
        handler = logging.StreamHandler(sys.stdout)
    else:
        path = config.resolve(target)
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(config.logging.level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.error").addFilter(_HideStartupTraceback())
    logging.getLogger("py4j").setLevel(max(config.logging.level, logging.WARNING))


def serve(config: Config) -> int:
    """Run the server until interrupted; 0 after a clean shutdown, 1 if startup failed."""
    import uvicorn

    from ..app import create_app

    app = create_app(config, warm_up=config.spark.warm_up)
    server = uvicorn.Server(uvicorn.Config(
        app, host=config.network.host, port=config.network.port, log_config=None,
        log_level=config.logging.level, lifespan="on", timeout_graceful_shutdown=5,
    ))
    server.run()
    return 0 if server.started else 1


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as err:
        print(f"sbpy run: {err}", file=sys.stderr)
        return 1
    configure_logging(config)
    return serve(config)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``run``."""
    parser = subparsers.add_parser("run", help="run the server")
    parser.add_argument("-c", "--config", default=None,
                        help="the config file (default: $SENSORBEE_CONFIG, else built-in defaults)")
    parser.set_defaults(func=run)
