"""A node's tags and why it has one; stewards set, unset, block and unblock (each change audited).

The routes parse the request and check the caller's rights; the change and its audit entry are
the steward-tag-change use case (api/service/tag_changes.py), as for `watershed tag`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import APIRouter, Depends, Query

from watershed.api.http.deps import Service, service, steward, viewer
from watershed.api.http.models import PreviewRequest, TagValues
from watershed.api.http.nodes import NodeId, missing, parse
from watershed.api.http.problems import ApiProblem
from watershed.api.service import tag_changes, tag_preview
from watershed.api.service.accounts.rights import Me
from watershed.api.service.provenance import NoTagError, why_paths
from watershed.api.service.tag_preview import TagPreview
from watershed.propagation import queries
from watershed.propagation.graph_store import GraphTagStore, UnknownNodeError
from watershed.propagation.policy import UnknownTagError
from watershed.propagation.views import NodeTags, WhyPaths

router = APIRouter(tags=["tags"])


def _tag_store(svc: Service) -> GraphTagStore:
    return GraphTagStore(svc.graph, svc.policy)


def _existing(svc: Service, node_id: str) -> str:
    node, label, _db = parse(node_id)
    if not svc.graph.read(queries.node_exists(label), {"id": node}):
        raise missing(label, node)
    return node


def _changeable(me: Me, node_id: str) -> tuple[str, str]:
    """The node a steward change names, once the caller may change its database."""
    node, label, db = parse(node_id)
    me.require("steward", db)
    return node, label


@contextmanager
def _refused(label: str, node: str) -> Iterator[None]:
    """A node the graph lacks is its 404, a tag the policy lacks a 400 naming it."""
    try:
        yield
    except UnknownNodeError:
        raise missing(label, node) from None
    except UnknownTagError as exc:
        raise ApiProblem(400, str(exc)) from None


@router.get("/nodes/{node_id:path}/tags/{key}/why", response_model=WhyPaths)
def why(
    node_id: NodeId,
    key: str,
    max_paths: int = Query(20, ge=1, le=200),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> WhyPaths:
    node = _existing(svc, node_id)
    try:
        return why_paths(_tag_store(svc), node, key, max_paths)
    except NoTagError as exc:
        raise ApiProblem(404, str(exc)) from None


@router.get("/nodes/{node_id:path}/tags", response_model=NodeTags)
def show(node_id: NodeId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> NodeTags:
    node, label, _db = parse(node_id)
    with _refused(label, node):
        return tag_changes.node_tags(_tag_store(svc), node)


@router.put("/nodes/{node_id:path}/tags/{key}", response_model=NodeTags)
def set_tag(
    node_id: NodeId, key: str, body: TagValues, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeTags:
    """Set a steward's tag (it wins over propagated ones here); takes effect downstream at the next run."""
    node, label = _changeable(me, node_id)
    store = _tag_store(svc)
    with _refused(label, node):
        tag_changes.set_tags(store, node, {key: body.values}, by=me.name)
    return tag_changes.node_tags(store, node)


@router.delete("/nodes/{node_id:path}/tags/{key}", response_model=NodeTags)
def unset_tag(
    node_id: NodeId, key: str, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeTags:
    node, label = _changeable(me, node_id)
    store = _tag_store(svc)
    with _refused(label, node):
        removed = tag_changes.unset_tags(store, node, [key], actor=me.name)
    if not removed:
        raise ApiProblem(404, f"{node} has no steward's {key} tag")
    return tag_changes.node_tags(store, node)


@router.put("/nodes/{node_id:path}/blocks/{key}", response_model=NodeTags)
def block(node_id: NodeId, key: str, me: Me = Depends(steward), svc: Service = Depends(service)) -> NodeTags:
    """Block a tag key: the node neither holds nor passes it on (from the next run)."""
    node, label = _changeable(me, node_id)
    store = _tag_store(svc)
    with _refused(label, node):
        tag_changes.block(store, node, key, by=me.name)
    return tag_changes.node_tags(store, node)


@router.delete("/nodes/{node_id:path}/blocks/{key}", response_model=NodeTags)
def unblock(
    node_id: NodeId, key: str, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeTags:
    node, label = _changeable(me, node_id)
    store = _tag_store(svc)
    with _refused(label, node):
        lifted = tag_changes.unblock(store, node, key, actor=me.name)
    if not lifted:
        raise ApiProblem(404, f"{key} is not blocked on {node}")
    return tag_changes.node_tags(store, node)


@router.post("/preview", response_model=TagPreview)
def preview(
    change: PreviewRequest,
    limit: int = Query(tag_preview.DEFAULT_LIMIT, ge=1, le=tag_preview.MAX_LIMIT),
    me: Me = Depends(steward),
    svc: Service = Depends(service),
) -> TagPreview:
    """What the next propagation run would change if the steward made `change` (set, unset, block,
    unblock): nothing is written or audited, and the caller needs the rights the change needs."""
    node, label = _changeable(me, change.node)
    with _refused(label, node):
        try:
            return tag_preview.preview_change(
                _tag_store(svc), change.model_copy(update={"node": node}), limit=limit, databases=me.databases
            )
        except tag_preview.NothingToTakeBackError as exc:
            raise ApiProblem(404, str(exc)) from None
        except tag_preview.PreviewError as exc:
            raise ApiProblem(400, str(exc)) from None
