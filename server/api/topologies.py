"""``/topologies``: create, list, show and delete topologies; the manager/topology dependencies.

Creating or deleting a topology does no Spark work. Names compare case-insensitively.
"""
from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from ..manager import InvalidNameError, TopologyExistsError, TopologyManager, TopologyNotFoundError
from ..topology import Topology
from .errors import body_object, invalid_body, json_body, not_found
from .schemas import (
    ERROR_RESPONSES,
    TopologyCreate,
    TopologyListResponse,
    TopologyResponse,
    request_body_doc,
)


def get_manager(request: Request) -> TopologyManager:
    """The app's ``TopologyManager`` (set up by the lifespan)."""
    return request.app.state.manager


Manager = Annotated[TopologyManager, Depends(get_manager)]
JsonBody = Annotated[Any, Depends(json_body)]


def get_topology(topology_name: str, manager: Manager) -> Topology:
    """The topology of the path; 404 E0001 "The topology doesn't exist" otherwise."""
    try:
        return manager.get(topology_name)
    except TopologyNotFoundError:
        raise not_found("The topology doesn't exist") from None


TopologyDep = Annotated[Topology, Depends(get_topology)]

router = APIRouter(prefix="/topologies", tags=["topologies"], responses=ERROR_RESPONSES)


@router.get("")
def list_topologies(manager: Manager) -> TopologyListResponse:
    """All topologies (unordered)."""
    return TopologyListResponse(topologies=[{"name": name} for name in manager.names()])


@router.post("", openapi_extra=request_body_doc(TopologyCreate))
def create_topology(body: JsonBody, manager: Manager) -> TopologyResponse:
    """Create an empty topology; 400 E0005 if the name is missing, invalid or already taken."""
    form = body_object(body)
    if "name" not in form:
        raise invalid_body(name=["field is missing"])
    try:
        topology = manager.create(form["name"])
    except InvalidNameError as err:
        raise invalid_body(name=[err.reason]) from None
    except TopologyExistsError:
        raise invalid_body(name=["already taken"]) from None
    return TopologyResponse(topology={"name": topology.name})


@router.get("/{topology_name}")
def show_topology(topology: TopologyDep) -> TopologyResponse:
    """One topology; 404 E0001 if it does not exist."""
    return TopologyResponse(topology={"name": topology.name})


@router.delete("/{topology_name}")
def delete_topology(topology_name: str, manager: Manager) -> dict[str, Any]:
    """Stop and remove a topology; ``{}`` even if it does not exist."""
    if not manager.delete(topology_name):
        return {"warning": {"message": "the topology wasn't stopped correctly"}}
    return {}
