"""The nightly TTL task through a real Celery worker and Redis broker, storing into FalkorDB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.ttl_advisor.test_advisor import CATALOG, TASKS
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.ingest.extract import extract_lineage


@pytest.fixture
def redis_broker(tmp_path):
    spec = ServerSpec("redis", "127.0.0.1", free_port(), tmp_path / "redis", with_falkordb=False)
    start(spec)
    yield spec
    stop(spec)


def test_nightly_task_stores_recommendations_with_the_run_id(graph_store, redis_broker, tmp_path):
    catalog = Catalog.from_dict(CATALOG)
    items = []
    for task_id, sql in TASKS.items():
        task = SqlTask(task_id=task_id, sql=sql, vars={"date": "2024-03-31"})
        items.append((task, extract_lineage(task, catalog)))
    graph_store.upsert_tasks(items, catalog)

    falkordb_port = graph_store.client.connection.connection_pool.connection_kwargs["port"]
    env = {
        **os.environ,
        "WATERSHED_FALKORDB_PORT": str(falkordb_port),
        "WATERSHED_GRAPH_NAME": graph_store.graph_name,
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{redis_broker.port}/0",
        "WATERSHED_TTL_MARGIN_DAYS": "3",
    }
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "watershed.ttl_advisor.tasks",
            "worker",
            "--pool=solo",
            "--concurrency=1",
            "--loglevel=WARNING",
            "--without-heartbeat",
            "--without-gossip",
            "--without-mingle",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        script = (
            "import json; from ttl_advisor.tasks import advise_and_store; "
            "print(json.dumps(advise_and_store.delay('run-42').get(timeout=120)))"
        )
        began = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=180
        )
        assert result.returncode == 0, result.stderr[-2000:]
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        assert summary["run_id"] == "run-42" and summary["keep"] == 2 and summary["shorter_than_table"] >= 8
        assert time.monotonic() - began < 180
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    rows = graph_store.read(
        "MATCH (c:Column {id: 'ods.events.b_ge'}) RETURN c.ttl_status, c.ttl_days_recommended, c.ttl_run, c.ttl_evidence"
    )
    status, days, run, evidence = rows[0]
    assert (status, days, run) == ("ttl", 24, "run-42")
    assert json.loads(evidence)[0]["task_id"] == "t_ge"
