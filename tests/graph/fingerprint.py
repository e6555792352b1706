"""A fingerprint of a whole graph, to compare a graph after crashes with one from a clean run.

Every node (labels, properties) and every relationship (type, both ends, properties) as one
canonical line each, sorted; the fingerprint is the SHA-256 of those lines. Timestamps differ
between any two runs and are left out, as are the nodes of labels that record runs.

    from tests.graph.fingerprint import graph_fingerprint, graph_lines
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

#: properties that hold wall-clock times (set by the load queries and the tag store)
TIMESTAMP_PROPERTIES = frozenset(
    {
        "created_at",
        "lineage_changed_at",
        "metadata_changed_at",
        "uses_changed_at",
        "tags_changed_at",
        "started_at",
        "at",
        "updated_at",
        "seen_at",
    }
)
#: labels of nodes that record a run rather than the warehouse (their ids are unique per run)
RUN_LABELS = frozenset({"HarvestRun"})

NODES = "MATCH (n) RETURN labels(n), properties(n)"
RELATIONSHIPS = "MATCH (a)-[r]->(b) RETURN type(r), labels(a), properties(a).id, labels(b), properties(b).id, properties(r)"


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)


def graph_lines(
    store,
    ignore_properties: Iterable[str] = TIMESTAMP_PROPERTIES,
    ignore_labels: Iterable[str] = RUN_LABELS,
) -> list[str]:
    """The graph's canonical lines, sorted (diff two of them to see what differs)."""
    ignored = set(ignore_properties)
    skipped = set(ignore_labels)

    def keep(properties) -> dict:
        return {k: v for k, v in dict(properties or {}).items() if k not in ignored}

    lines = []
    for labels, properties in store.read(NODES):
        if skipped & set(labels):
            continue
        lines.append("node " + _canonical([sorted(labels), keep(properties)]))
    for rel_type, a_labels, a_id, b_labels, b_id, properties in store.read(RELATIONSHIPS):
        if skipped & (set(a_labels) | set(b_labels)):
            continue
        lines.append(
            "rel " + _canonical([rel_type, sorted(a_labels), a_id, sorted(b_labels), b_id, keep(properties)])
        )
    return sorted(lines)


def graph_fingerprint(
    store,
    ignore_properties: Iterable[str] = TIMESTAMP_PROPERTIES,
    ignore_labels: Iterable[str] = RUN_LABELS,
) -> str:
    """SHA-256 over `graph_lines`: equal for two graphs with the same nodes, edges and properties."""
    digest = hashlib.sha256()
    for line in graph_lines(store, ignore_properties, ignore_labels):
        digest.update(line.encode())
        digest.update(b"\n")
    return digest.hexdigest()
