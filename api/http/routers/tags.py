"""A node's tags and why it has one; stewards set, unset, block and unblock (each change audited)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Query

from watershed.api.accounts.rights import Me
from watershed.api.audit import statement
from watershed.api.http.deps import Service, service, steward, viewer
from watershed.api.http.models import TagValues
from watershed.api.http.nodes import NodeId, missing, parse
from watershed.api.http.problems import ApiProblem
from watershed.propagation import queries
from watershed.propagation.views import NodeTag, NodeTags, OwnEntry, WhyPaths

router = APIRouter(tags=["tags"])


def _tag_store(svc: Service):
    from watershed.propagation.graph_store import GraphTagStore

    return GraphTagStore(svc.graph, svc.policy)


def _existing(svc: Service, node_id: str) -> tuple[str, str, str]:
    node, label, db = parse(node_id)
    if not svc.graph.read(queries.node_exists(label), {"id": node}):
        raise missing(label, node)
    return node, label, db


def _changeable(svc: Service, me: Me, node_id: str) -> tuple[str, str]:
    """The node a steward change names, once the caller may change its database and it exists."""
    node, label, db = parse(node_id)
    me.require("steward", db)
    if not svc.graph.read(queries.node_exists(label), {"id": node}):
        raise missing(label, node)
    return node, label


def node_tags(svc: Service, node: str) -> NodeTags:
    store = _tag_store(svc)
    own = store.own_tags(node)
    tags = store.tags_of([node]).get(node, {})
    return NodeTags(
        node=node,
        tags=[NodeTag.of(tag) for _, tag in sorted(tags.items())],
        set_here=[OwnEntry(**entry) for entry in own],
    )


def _own(view: NodeTags, rel_type: str, key: str) -> list[dict]:
    return [
        e.model_dump(exclude_none=True)
        for e in view.set_here
        if e.type == rel_type and e.key == key and (rel_type == "BLOCKS" or e.origin == "manual")
    ]


def _check(svc: Service, key: str, values: list[str] | None = None) -> None:
    from watershed.propagation.policy import UnknownTagError

    try:
        if values is None:
            svc.policy.check_key(key)
        else:
            svc.policy.check_tag(key, values)
    except UnknownTagError as exc:
        raise ApiProblem(400, str(exc)) from None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@router.get("/nodes/{node_id:path}/tags/{key}/why", response_model=WhyPaths)
def why(
    node_id: NodeId,
    key: str,
    max_paths: int = Query(20, ge=1, le=200),
    _: Me = Depends(viewer),
    svc: Service = Depends(service),
) -> WhyPaths:
    from watershed.api.cli.tag import why_paths

    node, _, _ = _existing(svc, node_id)
    store = _tag_store(svc)
    if key not in store.tags_of([node]).get(node, {}):
        raise ApiProblem(404, f"{node} has no {key} tag")
    return why_paths(store, node, key, max_paths)


@router.get("/nodes/{node_id:path}/tags", response_model=NodeTags)
def show(node_id: NodeId, _: Me = Depends(viewer), svc: Service = Depends(service)) -> NodeTags:
    node, _, _ = _existing(svc, node_id)
    return node_tags(svc, node)


@router.put("/nodes/{node_id:path}/tags/{key}", response_model=NodeTags)
def set_tag(
    node_id: NodeId, key: str, body: TagValues, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeTags:
    """Set a steward's tag (it wins over propagated ones here); takes effect downstream at the next run."""
    node, label = _changeable(svc, me, node_id)
    values = sorted({v.strip() for v in body.values if v.strip()})
    _check(svc, key, values)
    before = _own(node_tags(svc, node), "TAGGED", key)
    params = {
        "id": node,
        "key": key,
        "values": values,
        "origin": "manual",
        "by": me.name,
        "at": _now(),
        "rule": None,
    }
    after = [{"key": key, "value": v, "by": me.name} for v in values]
    svc.graph.write_all(
        [(queries.set_own(label), params), statement(me.name, "tag.set", f"{node}:{key}", before, after)]
    )
    return node_tags(svc, node)


@router.delete("/nodes/{node_id:path}/tags/{key}", response_model=NodeTags)
def unset_tag(
    node_id: NodeId, key: str, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeTags:
    node, label = _changeable(svc, me, node_id)
    before = _own(node_tags(svc, node), "TAGGED", key)
    if not before:
        raise ApiProblem(404, f"{node} has no steward's {key} tag")
    svc.graph.write_all(
        [
            (queries.unset_own(label), {"id": node, "key": key, "origin": "manual"}),
            statement(me.name, "tag.unset", f"{node}:{key}", before, None),
        ]
    )
    return node_tags(svc, node)


@router.put("/nodes/{node_id:path}/blocks/{key}", response_model=NodeTags)
def block(node_id: NodeId, key: str, me: Me = Depends(steward), svc: Service = Depends(service)) -> NodeTags:
    """Block a tag key: the node neither holds nor passes it on (from the next run)."""
    node, label = _changeable(svc, me, node_id)
    _check(svc, key)
    before = _own(node_tags(svc, node), "BLOCKS", key)
    svc.graph.write_all(
        [
            (queries.block(label), {"id": node, "key": key, "by": me.name, "at": _now()}),
            statement(me.name, "tag.block", f"{node}:{key}", before, [{"key": key, "by": me.name}]),
        ]
    )
    return node_tags(svc, node)


@router.delete("/nodes/{node_id:path}/blocks/{key}", response_model=NodeTags)
def unblock(
    node_id: NodeId, key: str, me: Me = Depends(steward), svc: Service = Depends(service)
) -> NodeTags:
    node, label = _changeable(svc, me, node_id)
    before = _own(node_tags(svc, node), "BLOCKS", key)
    if not before:
        raise ApiProblem(404, f"{key} is not blocked on {node}")
    svc.graph.write_all(
        [
            (queries.unblock(label), {"id": node, "key": key}),
            statement(me.name, "tag.unblock", f"{node}:{key}", before, None),
        ]
    )
    return node_tags(svc, node)
