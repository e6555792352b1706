"""Propagation settings (`WATERSHED_*` environment variables or the settings file)."""

from __future__ import annotations

from pathlib import Path

from watershed.graph.settings import Count, GraphSettings, Seconds


class PropagationSettings(GraphSettings):
    #: Celery broker and result backend; default: the Redis that `watershed services up` starts
    celery_broker: str | None = None
    #: the YAML tag policy; default: the built-in policy (propagation.policy.DEFAULT_POLICY_YAML)
    policy_file: Path | None = None
    #: nodes per Celery task. A task reads its batch in one query and writes it in one statement, and
    #: FalkorDB's readers (the API's pages) wait for a write to commit: 100 keeps that wait short (the
    #: column page's p99 during a full run about halved against 500, at the same run time:
    #: bench/api_during_propagation_bench.py) while a task still outweighs its 4-11 ms in the queue
    propagation_batch_size: Count = 100
    #: tables per read where a full run goes over every column (its rule seeds): the coordinator
    #: holds that many tables' columns at a time, not the warehouse's
    propagation_scan_batch: Count = 1000
    #: a run stops after this many layers (cycles terminate anyway; this caps runaway depth)
    propagation_max_layers: Count = 1000
    #: the run lock's expiry; the coordinator renews it every third of this while it lives
    propagation_lock_ttl_seconds: Seconds = 60.0
    #: batches of a layer are sent again when none of them finished for this long (a lost worker)
    propagation_stall_seconds: Seconds = 120.0
    #: how long the broker waits before handing an unacknowledged task to another worker
    propagation_visibility_seconds: Seconds = 600.0

    def broker_url(self) -> str:
        return self.celery_broker or f"redis://{self.redis_host}:{self.redis_port}/0"

    def graph_spec(self) -> dict:
        """What a worker needs to open the same graph (no secrets: a worker reads those from its own settings)."""
        return self.model_dump(
            include={
                "backend",
                "falkordb_host",
                "falkordb_port",
                "graph_name",
                "neo4j_uri",
                "neo4j_user",
                "neo4j_database",
            }
        )
