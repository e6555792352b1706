"""The nightly TTL task through the one Celery app: a real worker of the `ttl` queue, a real Redis broker.

`watershed ttl run` queues it; the worker stores into the configured graph
(WATERSHED_BACKEND), never a backend of its own choosing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from tests.support.celery_workers import Workers
from tests.support.paths import REPO
from tests.support.ttl_warehouse import CATALOG, TASKS
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.ingest.extract import extract_lineage
from watershed.ttl_advisor.tasks import GraphUnreachableError, advise_and_store


@pytest.fixture
def redis_broker(tmp_path):
    spec = ServerSpec("redis", "127.0.0.1", free_port(), tmp_path / "redis", with_falkordb=False)
    start(spec)
    yield spec
    stop(spec)


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "watershed.api.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_ttl_run_is_done_by_a_ttl_queue_worker_and_stored_with_the_run_id(
    graph_store, falkordb_server, redis_broker, tmp_path
):
    catalog = Catalog.from_dict(CATALOG)
    items = []
    for task_id, sql in TASKS.items():
        task = SqlTask(task_id=task_id, sql=sql, vars={"date": "2024-03-31"})
        items.append((task, extract_lineage(task, catalog)))
    graph_store.upsert_tasks(items, catalog)

    workers = Workers(redis_broker.port, falkordb_server.port, tmp_path)
    workers.env.update(
        {
            "WATERSHED_GRAPH_NAME": graph_store.graph_name,
            "WATERSHED_TTL_MARGIN_DAYS": "3",
            # the load above is seconds old: with the default margin the next run would redo it
            "WATERSHED_TTL_CLOCK_MARGIN_SECONDS": "0",
        }
    )
    workers.start(1, queues="ttl")
    try:
        result = _cli(workers.env, "ttl", "run", "--run-id", "run-42", "--wait", "180", "--format", "json")
        # nothing changed since: a plain run is incremental and advises no table, --full every one
        again = _cli(workers.env, "ttl", "run", "--run-id", "run-43", "--wait", "180", "--format", "json")
        forced = _cli(workers.env, "ttl", "run", "--run-id", "run-44", "--wait", "180", "--full")
    finally:
        workers.stop_all()
    assert (json.loads(again.stdout)["mode"], json.loads(again.stdout)["tables"]) == ("incremental", 0), (
        again.stderr
    )
    assert forced.returncode == 0, forced.stderr[-2000:]
    advised = re.search(r"TTL run run-44 \(full, (\d+) tables\)", forced.stdout)
    assert advised and int(advised.group(1)) > 0, forced.stdout
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    assert summary["run_id"] == "run-42" and summary["keep"] == 2 and summary["shorter_than_table"] >= 8
    rows = graph_store.read(
        "MATCH (c:Column {id: 'ods.events.b_ge'}) RETURN c.ttl_status, c.ttl_days_recommended, c.ttl_run, c.ttl_evidence"
    )
    status, days, run, evidence = rows[0]
    # stored by the last run that advised its table: run-43 advised none, run-44 every one
    assert (status, days, run) == ("ttl", 24, "run-44")
    assert json.loads(evidence)[0]["task_id"] == "t_ge"


def test_ttl_run_without_a_ttl_worker_stays_queued_and_says_so(redis_broker):
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("WATERSHED_")},
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{redis_broker.port}/0",
    }
    result = _cli(env, "ttl", "run", "--run-id", "run-queued")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "run-queued queued on the 'ttl' queue" in result.stdout
    assert "no worker serves the 'ttl' queue" in result.stderr
    import redis

    queued = redis.Redis(port=redis_broker.port).lrange("ttl", 0, -1)
    assert len(queued) == 1 and b"run-queued" in queued[0]


def test_the_ttl_task_honours_watershed_backend(monkeypatch, falkordb_server):
    # A FalkorDB answers on the configured FalkorDB port: a task that ignored the backend would succeed there.
    monkeypatch.setenv("WATERSHED_BACKEND", "neo4j")
    monkeypatch.setenv("WATERSHED_NEO4J_URI", f"bolt://127.0.0.1:{free_port()}")
    monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
    with pytest.raises(GraphUnreachableError) as raised:
        advise_and_store("run-neo4j")
    message = str(raised.value)
    assert "neo4j at bolt://127.0.0.1:" in message and "falkordb" not in message.lower()


def test_ttl_run_reports_the_workers_failure_naming_the_configured_backend(
    redis_broker, falkordb_server, tmp_path
):
    """A worker configured for an unreachable Neo4j fails the run naming neo4j; `ttl run --wait` says so, exit 1."""
    workers = Workers(redis_broker.port, falkordb_server.port, tmp_path)
    workers.env.update(
        {"WATERSHED_BACKEND": "neo4j", "WATERSHED_NEO4J_URI": f"bolt://127.0.0.1:{free_port()}"}
    )
    workers.start(1, queues="ttl")
    try:
        result = _cli(workers.env, "ttl", "run", "--run-id", "run-neo4j", "--wait", "120")
    finally:
        workers.stop_all()
    assert result.returncode == 1, result.stdout + result.stderr
    error = " ".join(result.stderr.split())
    assert "TTL run run-neo4j failed on the worker: GraphUnreachableError" in error
    assert "cannot reach the graph on neo4j at bolt://127.0.0.1:" in error
