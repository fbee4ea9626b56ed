"""``create_app(config)``: the FastAPI application of the server.

The lifespan builds the ``ServerContext`` (Spark session management, data dir, registries, UDS
storage) and the ``TopologyManager``, installs topology persistence (``persistence.py``), checks the
config's ``bql_file`` s, starts the Spark supervisor (``supervisor.py``: a dead driver JVM is restarted
and its queries re-attached) and answers at once while a background thread creates the topologies of
the config and restores the persisted ones (``restore.py``; config topologies win); at shutdown it stops
the restore, the supervisor and every topology (they stay persisted) and closes the context. Errors
are rendered with SensorBee's envelope (``sbpy.server.api.errors``); requests are numbered and guarded
(``sbpy.server.auth``: Host, bearer token, Origin, JSON bodies, body size), then counted and timed for
``GET /metrics`` (``sbpy.server.metrics``); ``/docs`` and ``/redoc`` are served without a CDN (``sbpy.server.docs``), the web console at ``/``
(``sbpy.server.console``).
The lifespan also makes ``storage.file_roots`` the only folders file sources and sinks may touch
(``ctx.file_roots``, read by each topology) and warns loudly when the server listens beyond loopback
without ``network.auth_token``.

Example::

    import uvicorn
    from sbpy.server.app import create_app
    from sbpy.server.config import load_config
    config = load_config("sensorbee.yaml")
    uvicorn.run(create_app(config), host=config.network.host, port=config.network.port)
"""
from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI

import sbpy

from . import persistence
from .api import build_router
from .api.errors import install_error_handlers
from .api.ingest import connector_router
from .auth import RequestContextMiddleware, RequestPolicy
from .config import Config
from .console import install_console
from .context import ServerContext
from .docs import install_docs
from .manager import StartupError, TopologyManager
from .metrics import install_metrics
from .request_metrics import RequestMetricsMiddleware
from .restore import BackgroundRestore
from .supervisor import Supervisor
from .topology import Topology

log = logging.getLogger("sbpy.server")

ContextFactory = Callable[[Config], Any]


def default_context(config: Config) -> Any:
    """``ServerContext.from_config(config)``."""
    return ServerContext.from_config(config)


def load_plugins(config: Config) -> None:
    """Load the installed plugins (``sbpy.plugins`` entry points; a failing one is logged), the
    modules listed in ``plugins`` and those of the plugin folders (``plugin_dirs``, by default
    ``plugins/`` beside the config file; a failing one aborts startup) into the default registries."""
    from sbpy.plugins.loader import PluginLoadError, load_all

    try:
        load_all(config.plugins, folders=config.plugin_folders)
    except PluginLoadError as exc:
        raise StartupError(str(exc)) from None


def install_uds_storage(ctx: Any, config: Config) -> Any:
    """The UDS storage of ``storage.uds`` as ``ctx.uds_storage`` (kept if the context has one); every
    topology of the server saves and loads its states there."""
    from .uds_storage import storage_from_config

    storage = getattr(ctx, "uds_storage", None)
    if storage is None:
        try:
            storage = storage_from_config(config)
        except (OSError, ValueError) as exc:
            raise StartupError(f"cannot set up the UDS storage: {exc}") from None
        try:
            ctx.uds_storage = storage
        except AttributeError:
            log.warning("the server context cannot hold a UDS storage; states use in_memory storage")
    return storage


def install_file_roots(ctx: Any, config: Config) -> None:
    """``ctx.file_roots``: the resolved ``config.file_roots``; topologies built on ``ctx`` hand them to
    the ``file`` source and sink (``sbpy.plugins.builtin.paths``), which refuse any other path."""
    from sbpy.plugins.builtin.paths import resolve_roots

    roots = resolve_roots(config.file_roots)
    try:
        ctx.file_roots = roots
    except AttributeError:
        raise StartupError("the server context cannot hold file roots; file sources and sinks "
                           "would be unrestricted") from None
    log.info("file sources and sinks may use paths under: %s", ", ".join(roots))


def exposure_warning(config: Config) -> str | None:
    """The warning for a server reachable beyond loopback without ``network.auth_token``, if so."""
    network = config.network
    if network.loopback_only or network.auth_token:
        return None
    return (f"SECURITY: the server listens on {network.listen_on!r} (beyond loopback) and "
            "network.auth_token is not set: anyone who can reach this address can create topologies "
            "and read and write files under the file roots. Set network.auth_token or listen on "
            "127.0.0.1.")


def create_app(config: Config | None = None, context_factory: ContextFactory | None = None,
               topology_factory: Callable[[str, Any], Topology] | None = None,
               warm_up: bool = False, restore_hold: Callable[[], None] | None = None) -> FastAPI:
    """The application for ``config``. ``context_factory`` replaces ``ServerContext.from_config``
    and ``topology_factory`` the ``Topology`` class (tests); ``warm_up`` starts Spark in the
    background at startup (``sbpy run``); ``restore_hold`` runs first in the restore thread (tests
    hold the restore with it). While it runs, ``app.state`` holds the ``manager``, the ``restore``
    (``restore.BackgroundRestore``) and, with a ``ServerContext``, the Spark ``supervisor``."""
    config = config or Config()
    make_context = context_factory or default_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warning = exposure_warning(config)
        if warning is not None:
            log.warning(warning)
        ctx = await anyio.to_thread.run_sync(make_context, config)
        manager = TopologyManager(ctx, topology_factory or Topology)
        app.state.context, app.state.manager = ctx, manager
        restore = supervisor = None
        try:
            try:
                load_plugins(config)
                install_uds_storage(ctx, config)
                install_file_roots(ctx, config)
                if getattr(ctx, "data_dir", None) is not None:
                    persistence.install(manager, release=ctx.release_state if isinstance(ctx, ServerContext)
                                        else None)
                await anyio.to_thread.run_sync(manager.check_config, config)
            except StartupError as err:
                log.error("startup failed: %s", err)
                raise
            if warm_up and hasattr(ctx, "warm_up"):
                ctx.warm_up()
            if isinstance(ctx, ServerContext):
                supervisor = app.state.supervisor = Supervisor(ctx, manager.list).start()
            # the API answers while the topologies come back (restore.py)
            restore = app.state.restore = BackgroundRestore(manager, config, hold=restore_hold).start()
            yield
        finally:
            if restore is not None:
                await anyio.to_thread.run_sync(restore.stop)
            if supervisor is not None:
                supervisor.stop()
            await anyio.to_thread.run_sync(manager.stop_all)
            close = getattr(ctx, "close", None)
            if close is not None:
                await anyio.to_thread.run_sync(close)

    app = FastAPI(
        title="sbpy",
        version=sbpy.__version__,
        summary="SensorBee-compatible BQL server on Spark Structured Streaming (REST API v1)",
        lifespan=lifespan,
        docs_url=None,  # served without a CDN by install_docs
        redoc_url=None,
    )
    app.state.config = config
    app.include_router(build_router())
    app.include_router(connector_router())  # POST .../sources/{s}/tuples (http source), GET .../select (SSE)
    install_docs(app)
    install_console(app)
    request_metrics = install_metrics(app, config.network)
    install_error_handlers(app)
    app.add_middleware(RequestContextMiddleware, policy=RequestPolicy.from_network(config.network))
    app.add_middleware(RequestMetricsMiddleware, metrics=request_metrics)  # outermost: counts refusals too
    return app
