"""Layer-by-layer propagation to a fixpoint, over any store of lineage and tags.

A run starts from a set of nodes, recomputes them from all their inputs
(`rules.derive`), and continues with the downstream neighbours of the nodes
whose tags changed, layer after layer, until nothing changes or the depth cap
is hit. Each layer is cut into batches; `compute_batch` is what a worker runs
for one batch: one read of the batch's incoming edges and their sources' tags,
one write of the changed nodes. Because every node is recomputed from all its
inputs and the rules are monotone, the fixpoint does not depend on the order of
batches, their size, the number of workers, or a batch being run twice.

Retraction is delete-and-rederive: the propagated tags of the affected
downstream cone are cleared first, then the cone is recomputed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from watershed.graph.errors import WatershedError
from watershed.propagation.policy import Policy
from watershed.propagation.rules import MANUAL, PROPAGATED, SEED, Incoming, TagValue, derive


class TagInputError(WatershedError, ValueError):
    """A node's own or incoming tags are not ones the policy allows (for instance a level it lacks)."""


class StaleTokenError(WatershedError, RuntimeError):
    """A write carried a fencing token that is no longer the newest: a newer run has started."""


@dataclass(frozen=True, slots=True)
class EdgeIn:
    """One lineage edge into a node, as the store knows it."""

    source: str
    task: str | None
    kind: str
    functions: tuple[str, ...] = ()
    weak: bool = False
    filters: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass(slots=True)
class OwnTags:
    """What stewards and rules set on a node directly."""

    seeds: dict[str, TagValue] = field(default_factory=dict)
    manual: dict[str, TagValue] = field(default_factory=dict)
    blocks: frozenset[str] = frozenset()


@dataclass(slots=True)
class BatchInputs:
    """Everything recomputing a batch needs, read in one go."""

    #: node -> its incoming lineage edges
    edges: dict[str, list[EdgeIn]]
    #: node or source -> its stored tags
    tags: dict[str, dict[str, TagValue]]
    #: node -> what stewards and rules set on it
    own: dict[str, OwnTags]
    #: node -> the stamp (`write_stamp`) of the write that last changed its tags
    stamps: dict[str, str] = field(default_factory=dict)


def write_stamp(run_id: str, layer: int) -> str:
    return f"{run_id}#{layer}"


class TagStore(Protocol):
    def read_batch(self, nodes: Sequence[str]) -> BatchInputs:
        """The incoming edges of `nodes`, the stored tags of the nodes and their sources, their own tags."""
        ...

    def downstream(self, nodes: Iterable[str]) -> set[str]: ...

    def write_tags(self, tags: dict[str, dict[str, TagValue]], run_id: str, token: int, stamp: str) -> None:
        """Store the nodes' new tags, marked with `stamp`; refused when `token` is not the newest run's."""
        ...

    def clear_tags(self, nodes: Iterable[str], run_id: str, token: int) -> None:
        """Forget the stored tags of `nodes`; recomputing a node restores its own tags."""
        ...

    def seeded_nodes(self) -> set[str]: ...

    def tagged_nodes(self) -> set[str]: ...


def _same(a: dict[str, TagValue], b: dict[str, TagValue]) -> bool:
    if a.keys() != b.keys():
        return False
    return all(
        a[k].values == b[k].values and a[k].origin == b[k].origin and a[k].provenance == b[k].provenance
        for k in a
    )


def compute_batch(
    store: TagStore, policy: Policy, nodes: Sequence[str], run_id: str, token: int, layer: int = 0
) -> list[str]:
    """Recompute `nodes` from all their inputs; write and return those that changed in this layer.

    A batch may run twice (a worker died after writing, the coordinator sent
    it again, a resumed run repeats its unfinished layer): a node this layer
    already changed compares equal the second time, so the write's stamp is
    what says it changed, and the answer is the same both times.
    """
    stamp = write_stamp(run_id, layer)
    inputs = store.read_batch(nodes)
    current, own = inputs.tags, inputs.own
    changes: dict[str, dict[str, TagValue]] = {}
    for node in nodes:
        # A self-overwriting table's edge from a node to itself adds nothing the node does not
        # already hold; following it would only let a value outlive its real support.
        incoming = [
            Incoming(e.source, current.get(e.source, {}), e.task, e.kind, e.functions, e.weak, e.filters)
            for e in inputs.edges.get(node, [])
            if e.source != node
        ]
        mine = own.get(node, OwnTags())
        try:
            new = derive(incoming, policy, seeds=mine.seeds, manual=mine.manual, blocks=mine.blocks)
        except (ValueError, KeyError) as exc:
            # A tag the policy does not know (set under another policy): the same input fails
            # the same way every time, so the error names the node rather than hiding in a trace.
            raise TagInputError(
                f"{node}: its tags or its inputs' tags do not fit the policy ({exc!r})"
            ) from None
        if not _same(new, current.get(node, {})):
            changes[node] = new
    if changes:
        store.write_tags(changes, run_id, token, stamp)
    repeated = [node for node in nodes if node not in changes and inputs.stamps.get(node) == stamp]
    return sorted([*changes, *repeated])


#: runs one layer's batches (and the layer's number); returns each batch's changed nodes
BatchRunner = Callable[[list[list[str]], int], list[list[str]]]


@dataclass
class LayerReport:
    layer: int
    nodes: int
    changed: int
    batches: int
    seconds: float


@dataclass
class RunReport:
    run_id: str
    layers: list[LayerReport] = field(default_factory=list)
    stopped_at_cap: bool = False

    @property
    def nodes_processed(self) -> int:
        return sum(layer.nodes for layer in self.layers)

    @property
    def tags_changed(self) -> int:
        return sum(layer.changed for layer in self.layers)


def batches_of(nodes: list[str], size: int) -> list[list[str]]:
    return [nodes[i : i + size] for i in range(0, len(nodes), size)]


LayerCallback = Callable[[LayerReport, list[str]], None]


def run_layers(
    store: TagStore,
    start: Iterable[str],
    run_batches: BatchRunner,
    *,
    run_id: str,
    batch_size: int = 500,
    max_layers: int = 1000,
    on_layer: LayerCallback | None = None,
    first_layer: int = 0,
) -> RunReport:
    """Propagate from `start` until no tag changes (or `max_layers`).

    `on_layer` gets each layer's report and the next layer's frontier, so a
    caller can persist where the run is and resume it from there.
    """
    report = RunReport(run_id)
    targets = sorted(set(start))
    layer = first_layer
    while targets:
        if layer >= max_layers:
            report.stopped_at_cap = True
            break
        began = time.monotonic()
        batches = batches_of(targets, batch_size)
        changed = sorted({node for result in run_batches(batches, layer) for node in result})
        targets = sorted(store.downstream(changed)) if changed else []
        entry = LayerReport(
            layer, sum(map(len, batches)), len(changed), len(batches), time.monotonic() - began
        )
        report.layers.append(entry)
        if on_layer is not None:
            on_layer(entry, targets)
        layer += 1
    return report


def downstream_cone(store: TagStore, nodes: Iterable[str], limit: int = 10_000_000) -> set[str]:
    """Every node reachable downstream of `nodes`, `nodes` included."""
    cone = set(nodes)
    frontier = set(cone)
    while frontier and len(cone) < limit:
        frontier = store.downstream(frontier) - cone
        cone |= frontier
    return cone


def start_full(store: TagStore, run_id: str, token: int) -> list[str]:
    """Clear every stored tag; the first layer is everything downstream of the seeds."""
    cone = downstream_cone(store, store.seeded_nodes())
    store.clear_tags(cone | store.tagged_nodes(), run_id, token)
    return sorted(cone)


def start_incremental(store: TagStore, changed: Iterable[str], run_id: str, token: int) -> list[str]:
    """Delete-and-rederive: clear the downstream cone of `changed` (nodes whose inputs or own tags changed)."""
    cone = downstream_cone(store, changed)
    store.clear_tags(cone, run_id, token)
    return sorted(cone)


def propagate_full(
    store: TagStore,
    run_batches: BatchRunner,
    *,
    run_id: str,
    token: int,
    batch_size: int = 500,
    max_layers: int = 1000,
    on_layer: LayerCallback | None = None,
) -> RunReport:
    """Clear every stored tag, then recompute everything downstream of the seeds."""
    start = start_full(store, run_id, token)
    return run_layers(
        store,
        start,
        run_batches,
        run_id=run_id,
        batch_size=batch_size,
        max_layers=max_layers,
        on_layer=on_layer,
    )


def propagate_incremental(
    store: TagStore,
    changed: Iterable[str],
    run_batches: BatchRunner,
    *,
    run_id: str,
    token: int,
    batch_size: int = 500,
    max_layers: int = 1000,
    on_layer: LayerCallback | None = None,
) -> tuple[RunReport, int]:
    """Delete-and-rederive over the downstream cone of `changed`; returns the report and the cone's size."""
    start = start_incremental(store, changed, run_id, token)
    report = run_layers(
        store,
        start,
        run_batches,
        run_id=run_id,
        batch_size=batch_size,
        max_layers=max_layers,
        on_layer=on_layer,
    )
    return report, len(start)


def local_batches(store: TagStore, policy: Policy, run_id: str, token: int) -> BatchRunner:
    """Run batches in this process, one after another (tests, small graphs, the reference)."""

    def run(batches: list[list[str]], layer: int) -> list[list[str]]:
        return [compute_batch(store, policy, batch, run_id, token, layer) for batch in batches]

    return run


__all__ = [
    "MANUAL",
    "PROPAGATED",
    "SEED",
    "EdgeIn",
    "OwnTags",
    "RunReport",
    "TagStore",
    "compute_batch",
    "downstream_cone",
    "local_batches",
    "propagate_full",
    "propagate_incremental",
    "run_layers",
    "start_full",
    "start_incremental",
]
