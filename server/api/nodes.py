"""``/topologies/{t}/sources|streams|sinks[/{name}]``: the nodes of a topology.

A list answers ``{"topology", "count", "<kind>s": [{"node_type", "name", "state"}]}``; one node
``{"topology", "<kind>": {"node_type", "name", "state", "status", ["meta"]}}``. Streams have the
node type ``"box"`` (SensorBee's).
"""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from sbpy.bql.errors import BQLError

from .errors import not_found
from .schemas import ERROR_RESPONSES, json_response
from .topologies import TopologyDep

NODE_TYPES = {"source": "source", "stream": "box", "sink": "sink"}

router = APIRouter(prefix="/topologies/{topology_name}", tags=["nodes"], responses=ERROR_RESPONSES)


def _list(topology: Any, kind: str) -> Any:
    nodes = []
    for node in topology.list_nodes(kind):
        nodes.append({**node, "node_type": NODE_TYPES[kind]})
    return json_response({"topology": topology.name, "count": len(nodes), f"{kind}s": nodes})


def _show(topology: Any, kind: str, name: str) -> Any:
    try:
        node = topology.node(kind, name)
    except (BQLError, LookupError):
        raise not_found(f"The {kind} was not found") from None
    node = {**node, "node_type": NODE_TYPES[kind]}
    if node.get("meta") is None:
        node.pop("meta", None)
    return json_response({"topology": topology.name, kind: node})


@router.get("/sources")
def list_sources(topology: TopologyDep) -> Any:
    """The sources of the topology."""
    return _list(topology, "source")


@router.get("/sources/{name}")
def show_source(topology: TopologyDep, name: str) -> Any:
    """One source with its status; 404 E0001 "The source was not found"."""
    return _show(topology, "source", name)


@router.get("/streams")
def list_streams(topology: TopologyDep) -> Any:
    """The streams (boxes) of the topology."""
    return _list(topology, "stream")


@router.get("/streams/{name}")
def show_stream(topology: TopologyDep, name: str) -> Any:
    """One stream with its status; 404 E0001 "The stream was not found"."""
    return _show(topology, "stream", name)


@router.get("/sinks")
def list_sinks(topology: TopologyDep) -> Any:
    """The sinks of the topology."""
    return _list(topology, "sink")


@router.get("/sinks/{name}")
def show_sink(topology: TopologyDep, name: str) -> Any:
    """One sink with its status; 404 E0001 "The sink was not found"."""
    return _show(topology, "sink", name)
