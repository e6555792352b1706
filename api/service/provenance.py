"""Why a node has a tag: the paths back from it to the seeds it came from.

Called by `watershed tag why` (api/cli/tag.py, which renders the tree), `watershed demo`
(through the CLI's tree) and GET /api/v1/nodes/{id}/tags/{key}/why (api/http/routers/tags.py).
"""

from __future__ import annotations

from pydantic import BaseModel

from watershed.graph.errors import WatershedError
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.views import TagSource, WhyPaths, WhyStep

#: how far up the lineage a missing tag's block is looked for (nodes visited)
BLOCK_SEARCH_NODES = 10_000


class BlockSeen(BaseModel):
    """A steward's block that keeps a tag from a node: on the node itself (`hops` 0) or upstream."""

    node: str
    key: str
    by: str | None = None
    at: str | None = None
    hops: int

    def says(self) -> str:
        where = "here" if self.hops == 0 else f"at {self.node} ({self.hops} hop(s) upstream)"
        return f"{self.key} is blocked {where} by {self.by or 'unknown'} at {self.at or 'an unknown time'}"


class NoTagError(WatershedError, LookupError):
    """The node does not hold the tag key asked about; `blocks` are the blocks that keep it away."""

    def __init__(self, message: str, blocks: list[BlockSeen] | None = None) -> None:
        super().__init__(message)
        self.blocks = blocks or []


def blocks_in_the_way(store: GraphTagStore, node: str, key: str) -> list[BlockSeen]:
    """The nearest blocks that stop `key` on the way to `node`: on the node, else upstream along
    value edges (a path is not followed past a block: the nearer block already stops the tag).

    A block of the key's family counts too (`Policy.blocked_keys`: a `pii` block stops `pii_type`).
    """
    policy = store.policy
    keys = sorted({key} | {k for k in policy.tag_keys() if key in policy.blocked_keys(frozenset([k]))})
    found: list[BlockSeen] = []
    seen, frontier, hops = {node}, [node], 0
    while frontier:
        rows = store.blocks_on(frontier, keys)
        found += [BlockSeen(node=n, key=k, by=by, at=at, hops=hops) for n, k, by, at in rows]
        blocked = {row[0] for row in rows}
        if len(seen) >= BLOCK_SEARCH_NODES:
            break
        above = store.upstream(n for n in frontier if n not in blocked) - seen
        seen |= above
        frontier, hops = sorted(above), hops + 1
    return sorted(found, key=lambda b: (b.hops, b.node, b.key))


def why_paths(store: GraphTagStore, node: str, key: str, max_paths: int = 200) -> WhyPaths:
    """The paths back from a node's tag to its seeds (a WhyPaths tree), at most `max_paths` of them.

    A node without a `key` tag is a NoTagError naming both, and where, by whom and when the tag
    was blocked on its way to the node, when a block keeps it away.
    """
    cache: dict[str, dict] = {node: store.tags_of([node]).get(node, {})}
    if key not in cache[node]:
        blocks = blocks_in_the_way(store, node, key)
        reason = "".join(f"; {b.says()}" for b in blocks)
        raise NoTagError(f"{node} has no {key} tag{reason}", blocks)
    paths = 0

    def tag_of(name: str):
        if name not in cache:
            cache[name] = store.tags_of([name]).get(name, {})
        return cache[name].get(key)

    def step(name: str, via=None) -> WhyStep:
        tag = tag_of(name)
        return WhyStep(
            node=name,
            values=sorted(tag.values) if tag is not None else None,
            origin=tag.origin if tag is not None else "gone",
            via=via,
        )

    def grow(here: WhyStep, path: set[str]) -> None:
        nonlocal paths
        tag = tag_of(here.node)
        if tag is None or tag.origin != "propagated":
            paths += 1
            return
        for p in tag.provenance:
            if p.source in path or paths >= max_paths:
                continue  # a cycle adds no new path to a seed
            child = step(p.source, TagSource.of(p))
            here.sources.append(child)
            grow(child, path | {p.source})

    root = step(node)
    grow(root, {node})
    return WhyPaths(node=node, key=key, paths=paths, stopped_at_max_paths=paths >= max_paths, tree=root)


__all__ = ["BLOCK_SEARCH_NODES", "BlockSeen", "NoTagError", "blocks_in_the_way", "why_paths"]
