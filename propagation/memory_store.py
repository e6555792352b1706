"""An in-process `TagStore`: the reference the graph-backed stores are checked against.

It holds the lineage of a set of tasks (column FLOWS_TO, table FLOWS_TO with
the task's filters, INFLUENCES) and the tags. Writes are fenced: a write with a
token older than the newest one seen is refused, as in the graph stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from watershed.graph.lineage import TaskLineage
from watershed.propagation.engine import BatchInputs, EdgeIn, OwnTags, StaleTokenError
from watershed.propagation.policy import Policy
from watershed.propagation.rules import MANUAL, SEED, TABLE_EDGE, TagValue, filter_values


class MemoryTagStore:
    def __init__(self) -> None:
        self._in: dict[str, list[EdgeIn]] = {}
        self._out: dict[str, set[str]] = {}
        self.tags: dict[str, dict[str, TagValue]] = {}
        self.stamps: dict[str, str] = {}
        self.own: dict[str, OwnTags] = {}
        self.token = 0
        self.writes = 0

    # ------------------------------------------------------------ building

    def add_edge(self, target: str, edge: EdgeIn) -> None:
        self._in.setdefault(target, []).append(edge)
        self._out.setdefault(edge.source, set()).add(target)

    def remove_task(self, task_id: str) -> set[str]:
        """Drop every edge of a task; returns the targets that lost an input."""
        touched: set[str] = set()
        for target, edges in self._in.items():
            kept = [e for e in edges if e.task != task_id]
            if len(kept) != len(edges):
                touched.add(target)
                self._in[target] = kept
        self._out = {}
        for target, edges in self._in.items():
            for edge in edges:
                self._out.setdefault(edge.source, set()).add(target)
        return touched

    def add_lineage(self, lineage: TaskLineage, policy: Policy) -> set[str]:
        """Add a task's edges; returns the nodes it writes to."""
        reads = {read.table: read for read in lineage.reads}
        filters = {
            table: filter_values([(p.column, p.op, p.values) for p in read.predicates], policy)
            for table, read in reads.items()
        }
        targets: set[str] = set()
        for column in lineage.columns:
            for source in column.sources:
                edge = EdgeIn(
                    source.column,
                    lineage.task_id,
                    source.kind,
                    tuple(source.functions),
                    False,
                    filters.get(source.table, {}),
                )
                self.add_edge(column.target, edge)
                targets.add(column.target)
        for ref in lineage.weak_references:
            self.add_edge(ref.target_table, EdgeIn(ref.column, lineage.task_id, ref.role, (), True))
            targets.add(ref.target_table)
        for table_edge in lineage.table_edges:
            self.add_edge(
                table_edge.target,
                EdgeIn(
                    table_edge.source,
                    lineage.task_id,
                    TABLE_EDGE,
                    (),
                    False,
                    filters.get(table_edge.source, {}),
                ),
            )
            targets.add(table_edge.target)
        return targets

    def set_own(self, node: str, key: str, values: Iterable[str], origin: str = SEED) -> None:
        own = self.own.setdefault(node, OwnTags())
        tag = TagValue(key, frozenset(values), origin)
        (own.manual if origin == MANUAL else own.seeds)[key] = tag

    def unset_own(self, node: str, key: str) -> None:
        own = self.own.get(node)
        if own is not None:
            own.seeds.pop(key, None)
            own.manual.pop(key, None)

    def block(self, node: str, key: str) -> None:
        own = self.own.setdefault(node, OwnTags())
        own.blocks = own.blocks | {key}

    # ------------------------------------------------------------ TagStore

    def read_batch(self, nodes: Sequence[str]) -> BatchInputs:
        edges = {node: list(self._in.get(node, [])) for node in nodes}
        wanted = {*nodes, *(edge.source for node_edges in edges.values() for edge in node_edges)}
        tags = {node: dict(self.tags[node]) for node in wanted if node in self.tags}
        own = {node: self.own[node] for node in nodes if node in self.own}
        stamps = {node: self.stamps[node] for node in nodes if node in self.stamps}
        return BatchInputs(edges, tags, own, stamps)

    def downstream(self, nodes: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for node in nodes:
            out |= self._out.get(node, set())
        return out

    def _fence(self, token: int) -> None:
        if token < self.token:
            raise StaleTokenError(f"write with fencing token {token} after token {self.token}")
        self.token = token

    def write_tags(self, tags: dict[str, dict[str, TagValue]], run_id: str, token: int, stamp: str) -> None:
        self._fence(token)
        for node, node_tags in tags.items():
            self.stamps[node] = stamp
            if node_tags:
                self.tags[node] = dict(node_tags)
            else:
                self.tags.pop(node, None)
        self.writes += 1

    def clear_tags(self, nodes: Iterable[str], run_id: str, token: int) -> None:
        """Forget the tags of `nodes`; recomputing them restores seeds and manual tags from `own`."""
        self._fence(token)
        for node in nodes:
            self.tags.pop(node, None)

    def seeded_nodes(self) -> set[str]:
        return {node for node, own in self.own.items() if own.seeds or own.manual or own.blocks}

    def tagged_nodes(self) -> set[str]:
        return set(self.tags)
