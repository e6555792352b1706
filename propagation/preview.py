"""What the next propagation run would change if a steward made one change: computed, not written.

`preview` runs the engine's own incremental run on an `OverlayStore`: `start_incremental` clears
the downstream cone of the changed node and `run_layers` recomputes it layer by layer with
`compute_batch` (and so `rules.derive`), exactly as a real run of the same change does. The overlay
reads lineage, stored tags and own tags from the real store but keeps every clear and every write in
memory, and reads the changed node's own tags with the proposed change already made. Nothing
reaches the graph: no tag, no run record, no fence.

The answer is, per node and key, the values stored now against the values the overlay holds at the
fixpoint. It is exact when the graph is at a fixpoint for everything else (the last run covered
every earlier change); changes made since the last run whose cones overlap this one show up too,
since the real run would apply them as well.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

from watershed.propagation.engine import (
    BatchInputs,
    EdgeIn,
    OwnTags,
    TagStore,
    batches_of,
    local_batches,
    run_layers,
    start_incremental,
)
from watershed.propagation.policy import Policy
from watershed.propagation.rules import MANUAL, TagValue

#: threads reading the cone's inputs at once (the graph server answers reads side by side)
READ_THREADS = 4

Action = Literal["set", "unset", "block", "unblock"]
ACTIONS: tuple[Action, ...] = ("set", "unset", "block", "unblock")


@dataclass(frozen=True, slots=True)
class OwnChange:
    """One steward change to a node's own tags, as `api/service/tag_changes.py` makes it."""

    node: str
    action: Action
    key: str
    #: the values of a `set` (they replace the key's earlier manual values)
    values: frozenset[str] = frozenset()

    def applied(self, own: OwnTags) -> OwnTags:
        """`own` as the graph will read it once the change is written (a copy; `own` is left alone)."""
        seeds, manual, blocks = dict(own.seeds), dict(own.manual), set(own.blocks)
        if self.action == "set":
            manual[self.key] = TagValue(self.key, self.values, MANUAL)
        elif self.action == "unset":
            manual.pop(self.key, None)
        elif self.action == "block":
            blocks.add(self.key)
        else:
            blocks.discard(self.key)
        return OwnTags(seeds, manual, frozenset(blocks))


class OverlayStore:
    """A `TagStore` over `base` whose clears and writes stay in memory; `change` is read as made.

    Lineage and own tags do not change during a preview, and every node of the cone is cleared
    before the first read, so a node's inputs are read from `base` once: later layers are served
    from memory (a real run reads a node again in each layer that recomputes it).
    """

    def __init__(self, base: TagStore, change: OwnChange) -> None:
        self.base = base
        self.change = change
        #: node -> its tags as this preview left them (cleared: {})
        self.tags: dict[str, dict[str, TagValue]] = {}
        self.stamps: dict[str, str] = {}
        #: node -> its tags as the base store holds them, the first time a batch read the node
        self.stored: dict[str, dict[str, TagValue]] = {}
        self._edges: dict[str, list[EdgeIn]] = {}
        self._own: dict[str, OwnTags] = {}
        #: base tags of every node and source read (outside the cone, they are what the run reads)
        self._base_tags: dict[str, dict[str, TagValue]] = {}

    def read_batch(self, nodes: Sequence[str]) -> BatchInputs:
        unread = [node for node in nodes if node not in self._edges]
        if unread:
            self._keep(unread, self.base.read_batch(unread))
        edges = {node: list(self._edges[node]) for node in nodes}
        tags: dict[str, dict[str, TagValue]] = {}
        for node in {*nodes, *(edge.source for found in edges.values() for edge in found)}:
            held = self.tags[node] if node in self.tags else self._base_tags.get(node)
            if held:
                tags[node] = held
        own = {node: self._own[node] for node in nodes}
        stamps = {node: self.stamps[node] for node in nodes if node in self.stamps}
        return BatchInputs(edges, tags, own, stamps)

    def prefetch(self, nodes: Sequence[str], batch_size: int, threads: int) -> None:
        """Read the inputs of `nodes` from `base` in batches on `threads` threads: reads only, so
        they need not wait for each other as a run's layers do."""
        batches = batches_of(list(nodes), batch_size)
        with ThreadPoolExecutor(max(1, min(threads, len(batches)))) as pool:
            for batch, inputs in zip(batches, pool.map(self.base.read_batch, batches), strict=True):
                self._keep(batch, inputs)

    def _keep(self, nodes: Sequence[str], inputs: BatchInputs) -> None:
        self._base_tags.update(inputs.tags)
        for node in nodes:
            self._edges[node] = inputs.edges.get(node, [])
            self.stored.setdefault(node, inputs.tags.get(node, {}))
            own = inputs.own.get(node, OwnTags())
            self._own[node] = self.change.applied(own) if node == self.change.node else own

    def downstream(self, nodes: Iterable[str]) -> set[str]:
        return self.base.downstream(nodes)

    def write_tags(self, tags: dict[str, dict[str, TagValue]], run_id: str, token: int, stamp: str) -> None:
        for node, node_tags in tags.items():
            self.tags[node] = dict(node_tags)
            self.stamps[node] = stamp

    def clear_tags(self, nodes: Iterable[str], run_id: str, token: int) -> None:
        for node in nodes:
            self.tags[node] = {}

    def seeded_nodes(self) -> set[str]:
        return self.base.seeded_nodes()

    def tagged_nodes(self) -> set[str]:
        return self.base.tagged_nodes() | {node for node, tags in self.tags.items() if tags}


@dataclass(frozen=True, slots=True)
class TagDelta:
    """One key of one node whose values the run would change (an empty side: no such tag)."""

    node: str
    key: str
    before: frozenset[str]
    after: frozenset[str]


@dataclass(slots=True)
class Preview:
    #: sorted by node, then key
    deltas: list[TagDelta] = field(default_factory=list)
    #: the nodes the run would recompute (the changed node's downstream cone)
    cone: int = 0
    layers: int = 0
    stopped_at_cap: bool = False


def preview(
    store: TagStore,
    policy: Policy,
    change: OwnChange,
    *,
    batch_size: int = 500,
    max_layers: int = 1000,
    threads: int = READ_THREADS,
) -> Preview:
    """The tags a propagation run of `change` would change, by the same engine, writing nothing."""
    overlay = OverlayStore(store, change)
    run_id = f"preview-{uuid.uuid4().hex[:8]}"
    start = start_incremental(overlay, [change.node], run_id, 0)
    overlay.prefetch(start, batch_size, threads)
    report = run_layers(
        overlay,
        start,
        local_batches(overlay, policy, run_id, 0),
        run_id=run_id,
        batch_size=batch_size,
        max_layers=max_layers,
    )
    deltas = []
    for node in start:
        before, after = overlay.stored.get(node, {}), overlay.tags.get(node, {})
        for key in sorted(before.keys() | after.keys()):
            old = before[key].values if key in before else frozenset()
            new = after[key].values if key in after else frozenset()
            if old != new:
                deltas.append(TagDelta(node, key, old, new))
    return Preview(deltas, len(start), len(report.layers), report.stopped_at_cap)


__all__ = ["ACTIONS", "Action", "OverlayStore", "OwnChange", "Preview", "TagDelta", "preview"]
