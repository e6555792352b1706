"""What a nightly run leaves behind, in a form two graphs can be compared by: lineage, tags, TTL
records and protection records. Run history (harvest runs, audit entries, run ids, times) is left
out: a second run adds to the history by design, and changes nothing else."""

from __future__ import annotations

import json
from pathlib import Path

_NODES = "MATCH (n) RETURN labels(n)[0], n.id"
_EDGES = "MATCH (a)-[e]->(b) WHERE type(e) <> 'TAGGED' RETURN labels(a)[0], a.id, type(e), labels(b)[0], b.id, e.kind"
_TAGS = (
    "MATCH (n)-[g:TAGGED]->(t:Tag) RETURN n.id, t.key, t.value, g.origin, g.hops, g.from, g.via_task, g.rule"
)
_TTL = (
    "MATCH (c:Column) WHERE c.ttl_status IS NOT NULL "
    "RETURN c.id, c.ttl_status, c.ttl_days_recommended, c.ttl_savings_bytes, c.ttl_evidence"
)
_PROTECTED = "MATCH (f:ProtectedFile) RETURN f.path, f.table, f.columns"


def _history(label: str) -> bool:
    """Nodes that record history, not state: every kind of run, the audit log, the coverage
    snapshots with their lists (one per date, computed when the nightly ran), and what the last
    TTL run and incremental protection plan kept to be incremental from (the nightly's plan is
    incremental, a plan by hand is not)."""
    return label.endswith("Run") or label in (
        "AuditEntry",
        "CoverageSnapshot",
        "CoverageList",
        "TtlAdviceState",
        "PlanState",
        "PlannedTable",
    )


def _rows(store, query: str) -> list[tuple]:
    rows = (tuple("" if v is None else v for v in row) for row in store.read(query))
    return sorted(row for row in rows if not (isinstance(row[0], str) and _history(row[0])))


def graph_state(store) -> dict[str, list[tuple]]:
    return {
        "nodes": _rows(store, _NODES),
        "edges": _rows(store, _EDGES),
        "tags": _rows(store, _TAGS),
        "ttl": _rows(store, _TTL),
        "protected_files": _rows(store, _PROTECTED),
    }


def plan_state(path: Path) -> dict:
    """A protection plan file without its creation time."""
    plan = json.loads(path.read_text())
    plan.pop("created_at")
    return plan
