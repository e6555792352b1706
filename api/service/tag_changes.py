"""A steward's tag change (set, unset, block, unblock) and its audit entry, sent in ONE write.

The change and the entry go to the graph as one `write_all` (one transaction on Neo4j, one
pipelined round trip on FalkorDB), so no crash between them can leave a change without its entry.
The node is checked to exist and the tag to be one of the policy's before anything is written.

Called by `watershed tag set|unset|block|unblock|show` (api/cli/tag.py) and the routes under
/api/v1/nodes/{id}/tags and /blocks (api/http/routers/tags.py). The faces pass who acts: the CLI
audits `cli:OS-USER` (and records `--by` on the tag), the API the signed-in user.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from watershed.api.service.audit import statement
from watershed.api.service.notifications import events
from watershed.graph.model import node_label
from watershed.propagation import queries
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.views import NodeTag, NodeTags, OwnEntry

MANUAL = "manual"


def node_tags(store: GraphTagStore, node: str) -> NodeTags:
    """A node's tags with their provenance, and what stewards and rules set on it.

    An unknown node is an UnknownNodeError naming it.
    """
    own = store.own_tags(node)
    tags = store.tags_of([node]).get(node, {})
    return NodeTags(
        node=node,
        tags=[NodeTag.of(tag) for _, tag in sorted(tags.items())],
        set_here=[OwnEntry(**entry) for entry in own],
    )


def _own(view: NodeTags, rel_type: str, key: str, origin: str = MANUAL) -> list[dict]:
    """What stewards (or accepted discoveries: `origin`) set on the node for `key`: the audit entry's before."""
    return [
        e.model_dump(exclude_none=True)
        for e in view.set_here
        if e.type == rel_type and e.key == key and (rel_type == "BLOCKS" or e.origin == origin)
    ]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _target(node: str, key: str) -> str:
    return f"{node}:{key}"


def _changed(
    action: str, node: str, key: str, actor: str, *, values: list[str] | None = None, origin: str = MANUAL
) -> tuple[str, dict]:
    """The `tag.changed` webhook event, in the same write as the change (nothing when no one subscribes)."""
    data = {"action": action, "node": node, "key": key, "actor": actor, "origin": origin}
    return events.statement("tag.changed", data if values is None else data | {"values": values})


def set_tags(
    store: GraphTagStore, node: str, tags: Mapping[str, Iterable[str]], *, by: str, actor: str | None = None
) -> None:
    """Set a steward's tags on `node` (each key's values replace that key's earlier ones).

    Every key and value is checked against the policy first (UnknownTagError, nothing written);
    all keys and their audit entries are then one write. `actor` (default `by`) is who the audit names.
    """
    store.graph.write_all(set_statements(store, node, tags, by=by, actor=actor))


def set_statements(
    store: GraphTagStore,
    node: str,
    tags: Mapping[str, Iterable[str]],
    *,
    by: str,
    actor: str | None = None,
    origin: str = MANUAL,
) -> list[tuple[str, dict]]:
    """The statements of `set_tags`, checked, for a caller that sends more in the same write (an
    accepted discovery proposal sets its tags with origin `discovered` and records its decision)."""
    view = node_tags(store, node)
    wanted = {key: sorted({v.strip() for v in values if v.strip()}) for key, values in tags.items()}
    for key, values in wanted.items():
        store.policy.check_tag(key, values)
    label, at, actor = node_label(node), _now(), actor or by
    writes = []
    for key, values in wanted.items():
        params = {
            "id": node,
            "key": key,
            "values": values,
            "origin": origin,
            "by": by,
            "at": at,
            "rule": None,
        }
        after = [
            {"key": key, "value": v, "by": by} | ({} if origin == MANUAL else {"origin": origin})
            for v in values
        ]
        writes.append((queries.set_own(label), params))
        writes.append(
            statement(actor, "tag.set", _target(node, key), _own(view, "TAGGED", key, origin), after)
        )
        writes.append(_changed("set", node, key, actor, values=values, origin=origin))
    return writes


def unset_tags(store: GraphTagStore, node: str, keys: Iterable[str], *, actor: str) -> list[str]:
    """Remove a steward's tags from `node`; returns the keys it had (the others change nothing)."""
    removed, writes = unset_statements(store, node, keys, actor=actor)
    if writes:
        store.graph.write_all(writes)
    return removed


def unset_statements(
    store: GraphTagStore, node: str, keys: Iterable[str], *, actor: str, origin: str = MANUAL
) -> tuple[list[str], list[tuple[str, dict]]]:
    """The keys `unset_tags` would remove (of `origin`) and its statements, for a caller that
    sends more in the same write (a rejected discovery proposal takes back its accepted seeds)."""
    view = node_tags(store, node)
    label = node_label(node)
    removed, writes = [], []
    for key in dict.fromkeys(keys):
        before = _own(view, "TAGGED", key, origin)
        if before:
            removed.append(key)
            writes.append((queries.unset_own(label), {"id": node, "key": key, "origin": origin}))
            writes.append(statement(actor, "tag.unset", _target(node, key), before, None))
            writes.append(_changed("unset", node, key, actor, origin=origin))
    return removed, writes


def block(store: GraphTagStore, node: str, key: str, *, by: str, actor: str | None = None) -> None:
    """Block a tag key on `node`: it neither holds nor passes on that key (from the next run)."""
    view = node_tags(store, node)
    store.policy.check_key(key)
    actor = actor or by
    store.graph.write_all(
        [
            (queries.block(node_label(node)), {"id": node, "key": key, "by": by, "at": _now()}),
            statement(
                actor, "tag.block", _target(node, key), _own(view, "BLOCKS", key), [{"key": key, "by": by}]
            ),
            _changed("block", node, key, actor),
        ]
    )


def unblock(store: GraphTagStore, node: str, key: str, *, actor: str) -> bool:
    """Lift a block; False (and nothing written) when `key` is not blocked on `node`."""
    before = _own(node_tags(store, node), "BLOCKS", key)
    if not before:
        return False
    store.graph.write_all(
        [
            (queries.unblock(node_label(node)), {"id": node, "key": key}),
            statement(actor, "tag.unblock", _target(node, key), before, None),
            _changed("unblock", node, key, actor),
        ]
    )
    return True


__all__ = ["block", "node_tags", "set_statements", "set_tags", "unblock", "unset_statements", "unset_tags"]
