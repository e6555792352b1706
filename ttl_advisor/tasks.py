"""The nightly TTL advice as a Celery task: compute from the graph, store on the Column nodes.

Workers: `celery -A ttl_advisor.tasks worker`; the broker is the Redis that
`watershed services up` starts (or `WATERSHED_CELERY_BROKER`).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from celery import Celery

from watershed.graph.settings import GraphSettings


def broker_url() -> str:
    import os

    configured = os.environ.get("WATERSHED_CELERY_BROKER")
    if configured:
        return configured
    settings = GraphSettings()
    return f"redis://{settings.redis_host}:{settings.redis_port}/0"


app = Celery("watershed_ttl", broker=broker_url(), backend=broker_url())
app.conf.update(task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1)


@app.task(name="ttl_advisor.advise_and_store")
def advise_and_store(run_id: str | None = None) -> dict:
    """Recompute every column's recommendation from the graph and store it with the run id (idempotent)."""
    from watershed.graph.falkordb_store import FalkorDBStore
    from watershed.ttl_advisor.advisor import advise
    from watershed.ttl_advisor.graph_uses import catalog_from_graph, index_graph
    from watershed.ttl_advisor.sizes import OrcSizeEstimator
    from watershed.ttl_advisor.store import store_recommendations

    run_id = run_id or f"ttl-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    store = FalkorDBStore.from_settings()
    try:
        catalog = catalog_from_graph(store)
        recommendations = advise(index_graph(store, catalog), catalog, estimate=OrcSizeEstimator(catalog))
        stored = store_recommendations(store, recommendations, run_id)
    finally:
        store.close()
    return {
        "run_id": run_id,
        "columns": stored,
        "ttl": sum(1 for r in recommendations if r.status == "ttl"),
        "shorter_than_table": sum(1 for r in recommendations if r.shorter_than_table),
        "keep": sum(1 for r in recommendations if r.status == "keep"),
        "unused": sum(1 for r in recommendations if r.status == "unused"),
    }
