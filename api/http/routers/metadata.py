"""A node's description and owner, with where each came from; stewards set and clear them (audited).

The routes parse the request and check the caller's rights; reading, checking and the write with
its audit entry are the node-metadata use case (api/service/node_metadata.py), as for
`watershed describe` and `watershed owner`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import APIRouter, Depends

from watershed.api.http.deps import Service, service, steward, viewer
from watershed.api.http.models import DescriptionText, OwnerText
from watershed.api.http.nodes import NodeId, missing, parse
from watershed.api.http.problems import ApiProblem
from watershed.api.service import node_metadata
from watershed.api.service.accounts.rights import Me
from watershed.api.service.node_metadata import (
    InvalidMetadataError,
    MetadataField,
    NodeMetadata,
    NothingToClearError,
)
from watershed.propagation.graph_store import UnknownNodeError

router = APIRouter(tags=["metadata"])


@contextmanager
def _refused(label: str, node: str) -> Iterator[None]:
    """A node the graph lacks is its 404, a bad value a 400 saying why, nothing to clear a 404."""
    try:
        yield
    except UnknownNodeError:
        raise missing(label, node) from None
    except InvalidMetadataError as exc:
        raise ApiProblem(400, str(exc)) from None
    except NothingToClearError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.get("/nodes/{node_id:path}/metadata", response_model=NodeMetadata)
def show(node_id: NodeId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> NodeMetadata:
    """The node's description and owner, each with its source and, when propagated, its path back."""
    node, label, _db = parse(node_id)
    with _refused(label, node):
        return node_metadata.node_metadata(svc.graph, node)


def _set(node_id: str, field: MetadataField, value: str, me: Me, svc: Service) -> NodeMetadata:
    node, label, db = parse(node_id)
    me.require("steward", db)
    with _refused(label, node):
        return node_metadata.set_value(svc.graph, node, field, value, actor=me.name)


def _clear(node_id: str, field: MetadataField, me: Me, svc: Service) -> NodeMetadata:
    node, label, db = parse(node_id)
    me.require("steward", db)
    with _refused(label, node):
        return node_metadata.clear_value(svc.graph, node, field, actor=me.name)


@router.put("/nodes/{node_id:path}/description", response_model=NodeMetadata)
def set_description(
    node_id: NodeId, body: DescriptionText, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeMetadata:
    """A steward's description (it wins over the catalog's); copies downstream follow at the next run."""
    return _set(node_id, "description", body.value, me, svc)


@router.delete("/nodes/{node_id:path}/description", response_model=NodeMetadata)
def clear_description(
    node_id: NodeId, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeMetadata:
    """Take back the steward's description: the catalog's shows again (or a propagated one, next run)."""
    return _clear(node_id, "description", me, svc)


@router.put("/nodes/{node_id:path}/owner", response_model=NodeMetadata)
def set_owner(
    node_id: NodeId, body: OwnerText, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeMetadata:
    """A steward's owner: an email address or a person's or team's name (a 400 says why another is refused)."""
    return _set(node_id, "owner", body.value, me, svc)


@router.delete("/nodes/{node_id:path}/owner", response_model=NodeMetadata)
def clear_owner(node_id: NodeId, me: Me = Depends(steward), svc: Service = Depends(service)) -> NodeMetadata:
    return _clear(node_id, "owner", me, svc)
