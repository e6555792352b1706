"""Why a node has a tag: the paths back from it to the seeds it came from.

Called by `watershed tag why` (api/cli/tag.py, which renders the tree), `watershed demo`
(through the CLI's tree) and GET /api/v1/nodes/{id}/tags/{key}/why (api/http/routers/tags.py).
"""

from __future__ import annotations

from watershed.graph.errors import WatershedError
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.views import TagSource, WhyPaths, WhyStep


class NoTagError(WatershedError, LookupError):
    """The node does not hold the tag key asked about."""


def why_paths(store: GraphTagStore, node: str, key: str, max_paths: int = 200) -> WhyPaths:
    """The paths back from a node's tag to its seeds (a WhyPaths tree), at most `max_paths` of them.

    A node without a `key` tag is a NoTagError naming both.
    """
    cache: dict[str, dict] = {node: store.tags_of([node]).get(node, {})}
    if key not in cache[node]:
        raise NoTagError(f"{node} has no {key} tag")
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


__all__ = ["NoTagError", "why_paths"]
