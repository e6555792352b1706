"""The same fixpoint on a generated warehouse whatever the workers, batch sizes, or a worker killed mid-run."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from bench.propagation_bench import load_generated
from tests.support.paths import REPO
from watershed.api.service.celery_app import app_for
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.ingest.generator import generate_warehouse, seed_apps
from watershed.propagation.coordinator import celery_runner, local_runner, propagate
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.run_state import RunState
from watershed.propagation.settings import PropagationSettings

POLICY = default_policy()


@pytest.fixture(scope="module")
def warehouse_graph(tmp_path_factory, falkordb_server, celery_redis):
    """A 60-task generated warehouse, loaded and seeded, on a graph of its own."""
    directory = tmp_path_factory.mktemp("warehouse")
    generate_warehouse(directory, tasks=60, seed=11)
    graph = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph="determinism")
    graph.ensure_schema()
    _, catalog = load_generated(graph, directory)
    assert seed_apps(GraphTagStore(graph, POLICY), catalog) > 0
    yield graph
    graph.clear()
    graph.close()


def settings_for(graph, celery_redis, **overrides) -> PropagationSettings:
    return PropagationSettings(
        falkordb_port=graph.client.connection.connection_pool.connection_kwargs["port"],
        graph_name=graph.graph_name,
        celery_broker=f"redis://127.0.0.1:{celery_redis.port}/0",
        **overrides,
    )


def full_run(graph, celery_redis, runner=None, batch_size=500, **overrides):
    settings = settings_for(graph, celery_redis, **overrides)
    state = RunState.from_url(settings.broker_url(), graph.graph_name)
    return propagate(
        graph,
        POLICY,
        state,
        runner or celery_runner(settings, POLICY, app=app_for(settings)),
        full=True,
        settings=settings,
        batch_size=batch_size,
    )


def snapshot(graph) -> dict:
    tags = GraphTagStore(graph, POLICY)
    return tags.tags_of(tags.tagged_nodes())


@pytest.fixture(scope="module")
def reference(warehouse_graph, celery_redis, workers):
    """The clean run: one worker, batches of 500."""
    record = full_run(warehouse_graph, celery_redis)
    assert record.status == "done" and len(record.layers) >= 3
    result = snapshot(warehouse_graph)
    assert sum(1 for tags in result.values() if "pii" in tags) > 50
    assert sum(1 for tags in result.values() if "app" in tags) > 50
    return result


def test_in_process_run_equals_the_workers(warehouse_graph, celery_redis, reference):
    full_run(warehouse_graph, celery_redis, runner=local_runner, batch_size=7)
    assert snapshot(warehouse_graph) == reference


@pytest.mark.parametrize("batch_size", [1, 500])
def test_two_workers_any_batch_size(warehouse_graph, celery_redis, workers, reference, batch_size):
    (second,) = workers.start(1)
    try:
        record = full_run(warehouse_graph, celery_redis, batch_size=batch_size)
    finally:
        workers.stop(second)
    assert record.status == "done"
    assert snapshot(warehouse_graph) == reference


def test_a_worker_killed_mid_run(warehouse_graph, celery_redis, workers, reference):
    (victim,) = workers.start(1)
    state = RunState.from_url(f"redis://127.0.0.1:{celery_redis.port}/0", warehouse_graph.graph_name)
    outcome: dict = {}

    def coordinate() -> None:
        try:
            outcome["record"] = full_run(
                warehouse_graph, celery_redis, batch_size=3, propagation_stall_seconds=8
            )
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=coordinate)
    thread.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        record = state.current()
        if record is not None and record.status == "running" and record.layers:
            break
        time.sleep(0.02)
    workers.kill(victim)
    thread.join(timeout=240)
    assert not thread.is_alive(), "the run did not finish after a worker was killed"
    assert "error" not in outcome, outcome.get("error")
    assert outcome["record"].status == "done"
    assert snapshot(warehouse_graph) == reference


def test_a_killed_coordinator_is_resumed(warehouse_graph, celery_redis, workers, reference):
    env = {
        **os.environ,
        "WATERSHED_FALKORDB_PORT": str(
            warehouse_graph.client.connection.connection_pool.connection_kwargs["port"]
        ),
        "WATERSHED_GRAPH_NAME": warehouse_graph.graph_name,
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{celery_redis.port}/0",
        "WATERSHED_PROPAGATION_LOCK_TTL_SECONDS": "3",
        "WATERSHED_PROPAGATION_BATCH_SIZE": "2",
        "PYTHONPATH": str(REPO),
    }
    command = [sys.executable, "-m", "watershed.api.cli", "propagate"]
    state = RunState.from_url(env["WATERSHED_CELERY_BROKER"], warehouse_graph.graph_name)
    coordinator = subprocess.Popen(
        [*command, "--full"], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and coordinator.poll() is None:
        record = state.current()
        if record is not None and record.status == "running" and record.layers:
            break
        time.sleep(0.02)
    assert coordinator.poll() is None, coordinator.stdout.read().decode()[-2000:]
    coordinator.kill()
    coordinator.wait()
    interrupted = state.current()
    assert interrupted.status == "running"

    resumed = subprocess.run(
        [*command, "--wait", "30"], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"resuming interrupted full run {interrupted.run_id}" in resumed.stdout
    finished = state.current()
    assert finished.run_id == interrupted.run_id and finished.status == "done" and finished.resumed == 1
    assert snapshot(warehouse_graph) == reference
