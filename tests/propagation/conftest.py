"""Propagation fixtures: the CLI's settings on a small lineage of its own. The Celery broker Redis
and the workers are the whole session's (tests/support/celery_workers.py, registered by
tests/conftest.py)."""

from __future__ import annotations

import pytest

# the worker pool's new home; named here too for the modules that still import it from here
from tests.support.celery_workers import Workers  # noqa: F401


@pytest.fixture
def cli_env(graph_store, celery_redis, monkeypatch):
    """The small lineage of test_celery_rules on a graph of its own; the CLI's settings point at it."""
    from tests.support.rules_warehouse import load

    load(graph_store)
    port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(port))
    monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
    monkeypatch.setenv("WATERSHED_CELERY_BROKER", f"redis://127.0.0.1:{celery_redis.port}/0")
    return graph_store
