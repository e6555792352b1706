"""The nightly TTL advice as a Celery task, as a plain function: compute from the graph, store on the Column nodes.

The graph is read, advised and stored one batch of tables at a time (`ttl_advisor.batches`).

The one Celery app (`watershed.api.service.celery_app`) registers it under `TASK_NAME`
and routes it to the `ttl` queue (`watershed ttl run` queues it). The graph is
the configured one (WATERSHED_BACKEND and the rest of the graph settings, read
by the worker), like every other entry point's.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from watershed.graph.backends import open_store
from watershed.graph.errors import WatershedError
from watershed.graph.settings import GraphSettings
from watershed.ttl_advisor.model import AdviceCounts

TASK_NAME = "ttl_advisor.advise_and_store"


class GraphUnreachableError(WatershedError, ConnectionError):
    """The TTL task could not read or write the configured graph: the message names the backend and where."""


class TtlRunSummary(AdviceCounts):
    """What one TTL run stored (its counts, `columns` the columns whose recommendation was stored):
    the task's result (as a dict, for Celery's JSON) and `watershed ttl run`'s output. An
    incremental run's counts are of the columns it advised again; the others kept their advice."""

    run_id: str
    #: `full` (every table advised) or `incremental` (the tables whose inputs changed)
    mode: str = "full"
    #: tables advised
    tables: int = 0


def _where(settings: GraphSettings) -> str:
    if settings.backend == "neo4j":
        return f"neo4j at {settings.neo4j_uri} (database {settings.neo4j_database})"
    return f"{settings.backend} at {settings.falkordb_host}:{settings.falkordb_port} (graph {settings.graph_name})"


def new_run_id() -> str:
    return f"ttl-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def advise_and_store(run_id: str | None = None, full: bool = False) -> dict:
    """Recompute the recommendations of the columns whose inputs changed since the last complete
    run (every column's when `full`, or when a full run is due) and store them with the run id.

    Batch by batch of `ttl_batch_tables` tables (`ttl_advisor.batches`): a crash part-way leaves
    the finished batches under this run id and the rest as the previous run left them; running
    again converges.
    """
    from watershed.ttl_advisor.batches import store_advice
    from watershed.ttl_advisor.settings import AdvisorSettings

    run_id = run_id or new_run_id()
    settings = GraphSettings()
    # Settings first: a bad one (a zero batch size) names itself before any work.
    advisor_settings = AdvisorSettings()
    store = open_store(settings)
    try:
        try:
            store.ping()
        except Exception as exc:
            # A wrong backend or a server that is down shows here: say which graph, before any work.
            first_line = (str(exc).strip().splitlines() or [""])[0]
            raise GraphUnreachableError(
                f"TTL run {run_id}: cannot reach the graph on {_where(settings)}: {type(exc).__name__}: {first_line}"
            ) from None
        stored = store_advice(store, run_id, advisor_settings, full=full)
    finally:
        store.close()
    return TtlRunSummary(
        run_id=run_id, mode=stored.mode, tables=stored.tables, **stored.counts.model_dump()
    ).model_dump()
