"""A fingerprint of every node's tags with their provenance, to compare a run after crashes with a clean one.

Two parts, both canonical and sorted: each node's resulting tags (`n.tags`, the JSON
workers read: values, origin, and per contributing source the task, kind, rule and
hops), and every TAGGED edge with its origin and provenance properties. The run id
and write stamp differ between any two runs and are left out.
"""

from __future__ import annotations

import hashlib
import json

NODE_TAGS = "MATCH (n) WHERE (n:Column OR n:Table) AND n.tags IS NOT NULL RETURN n.id, n.tags"
TAGGED = (
    "MATCH (n)-[r:TAGGED]->(t:Tag) "
    "RETURN n.id, t.id, r.origin, r.`from`, r.via_task, r.kind, r.rule, r.hops, r.by"
)


def tag_lines(graph) -> list[str]:
    lines = [f"tags {node} {text}" for node, text in graph.read(NODE_TAGS)]
    lines += ["edge " + json.dumps(row, default=str) for row in graph.read(TAGGED)]
    return sorted(lines)


def tag_fingerprint(graph) -> str:
    return hashlib.sha256("\n".join(tag_lines(graph)).encode()).hexdigest()
