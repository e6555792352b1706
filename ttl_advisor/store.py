"""Writing recommendations back onto the graph's Column nodes."""

from __future__ import annotations

import json

from watershed.graph.store import GraphStore, chunks
from watershed.ttl_advisor.model import Recommendation

STORE = (
    "UNWIND $rows AS r MATCH (c:Column {id: r.id}) "
    "SET c.ttl_status = r.status, c.ttl_days_recommended = r.ttl_days, c.ttl_evidence = r.evidence, "
    "c.ttl_run = r.run, c.ttl_savings_bytes = r.savings, c.ttl_days_cut = r.cut, "
    "c.ttl_read_outside_by = r.outside"
)


def store_recommendations(store: GraphStore, recommendations: list[Recommendation], run_id: str) -> int:
    """Set ttl_status, ttl_days_recommended, ttl_evidence (JSON), ttl_savings_bytes, ttl_days_cut and ttl_run on each column.

    Idempotent. The savings are kept so that a reader can list the biggest savings first without
    sampling ORC files again (null when the table's size is unknown).
    """
    rows = [
        {
            "id": rec.column,
            "status": rec.status,
            "ttl_days": rec.ttl_days,
            "evidence": json.dumps([use.model_dump() for use in rec.evidence], sort_keys=True),
            "run": run_id,
            "savings": rec.savings_bytes,
            "cut": rec.days_cut,
            # null, not []: a column read by no outside tool has no such property
            "outside": rec.read_outside_by or None,
        }
        for rec in recommendations
    ]
    store.write_all([(STORE, {"rows": list(batch)}) for batch in chunks(rows, store.batch_size)])
    return len(rows)
