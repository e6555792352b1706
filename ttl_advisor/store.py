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
#: the listing the table's savings were measured on (sizes.listing_fingerprint), kept with its advice
STORE_FILES = "UNWIND $rows AS r MATCH (t:Table {id: r.id}) SET t.ttl_files = r.files"


def store_recommendations(
    store: GraphStore,
    recommendations: list[Recommendation],
    run_id: str,
    files: dict[str, str | None] | None = None,
) -> int:
    """Set ttl_status, ttl_days_recommended, ttl_evidence (JSON), ttl_savings_bytes, ttl_days_cut and ttl_run on each column.

    Idempotent. The savings are kept so that a reader can list the biggest savings first without
    sampling ORC files again (null when the table's size is unknown). `files`: each advised
    table's listing fingerprint, written in the same unit, so a table's fingerprint never runs
    ahead of its columns' advice (an incremental run compares it).
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
    statements = [(STORE, {"rows": list(batch)}) for batch in chunks(rows, store.batch_size)]
    listed = [{"id": table, "files": digest} for table, digest in (files or {}).items()]
    statements += [(STORE_FILES, {"rows": list(batch)}) for batch in chunks(listed, store.batch_size)]
    store.write_all(statements)
    return len(rows)
