"""The REST API v1: one router per resource, mounted under ``/api/v1`` by ``sbpy.server.app``."""
from __future__ import annotations

from fastapi import APIRouter

from . import nodes, queries, status, topologies

API_PREFIX = "/api/v1"


def build_router() -> APIRouter:
    """The ``/api/v1`` router including every resource router."""
    router = APIRouter(prefix=API_PREFIX)
    router.include_router(status.router)
    router.include_router(topologies.router)
    router.include_router(queries.router)
    router.include_router(nodes.router)
    return router
