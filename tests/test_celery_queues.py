"""One Celery app, one queue per kind of work: a worker of one queue never takes (and drops) the other's tasks.

Real worker processes of `watershed.api.service.celery_app` on a Redis of this module's
own (so the session's propagation workers cannot take a message), against the
session's FalkorDB. Worker logs are at INFO, which names every task a worker
received: what each worker ran is read from its own log.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import redis

from tests.support.celery_workers import Workers
from tests.support.rules_warehouse import POLICY, load, run
from watershed.api.service.celery_app import (
    NIGHTLY_QUEUE,
    PROPAGATION_QUEUE,
    QUEUES,
    ROUTES,
    TTL_QUEUE,
    workers_serving,
)
from watershed.api.service.nightly.beat import TASK_NAME as NIGHTLY_TASK
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.propagation.settings import PropagationSettings
from watershed.propagation.tasks import TASK_NAME as BATCH_TASK
from watershed.ttl_advisor.tasks import TASK_NAME as TTL_TASK


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    spec = ServerSpec(
        "redis", "127.0.0.1", free_port(), tmp_path_factory.mktemp("queues-redis"), with_falkordb=False
    )
    start(spec)
    yield spec
    stop(spec)


@pytest.fixture
def pool(broker, falkordb_server, graph_store, tmp_path):
    workers = Workers(broker.port, falkordb_server.port, tmp_path)
    workers.env["WATERSHED_GRAPH_NAME"] = graph_store.graph_name
    yield workers
    workers.stop_all()
    redis.Redis(port=broker.port).flushdb()


def _log(workers: Workers, index: int) -> str:
    return (workers.log_dir / f"worker-{index}.log").read_text()


def _received(log: str, task: str) -> list[str]:
    """The ids of the `task` messages a worker's INFO log says it received."""
    return re.findall(rf"Task {re.escape(task)}\[([0-9a-f-]+)\] received", log)


def _probe_batch(app, graph_store) -> object:
    """A propagation batch of no nodes: it reads nothing, writes nothing, and succeeds wherever it runs."""
    settings = PropagationSettings(
        falkordb_port=graph_store.client.connection.connection_pool.connection_kwargs["port"],
        graph_name=graph_store.graph_name,
    )
    return app.send_task(
        BATCH_TASK, args=[settings.graph_spec(), POLICY.model_dump(mode="json"), [], "probe", 0, 0]
    )


def test_every_task_of_the_app_has_its_own_queue():
    from watershed.api.service.celery_app import app_for

    app = app_for(PropagationSettings(celery_broker="redis://127.0.0.1:1/0"))
    ours = sorted(name for name in app.tasks if not name.startswith("celery."))
    assert ours == sorted([BATCH_TASK, TTL_TASK, NIGHTLY_TASK])
    assert ROUTES == {BATCH_TASK: PROPAGATION_QUEUE, TTL_TASK: TTL_QUEUE, NIGHTLY_TASK: NIGHTLY_QUEUE}
    assert {q.name for q in app.conf.task_queues} == set(QUEUES)
    for name, queue in ROUTES.items():
        assert app.amqp.router.route({}, name)["queue"].name == queue


def test_a_propagation_and_the_ttl_task_at_once_on_one_worker_per_queue(pool, graph_store, broker):
    load(graph_store)
    pool.start(1, queues=PROPAGATION_QUEUE, loglevel="INFO")
    pool.start(1, queues=TTL_QUEUE, loglevel="INFO")
    app = pool.app()
    for queue, worker in ((PROPAGATION_QUEUE, "w0@"), (TTL_QUEUE, "w1@")):
        serving = workers_serving(app, queue)
        assert len(serving) == 1 and serving[0].startswith(worker), (queue, serving)

    ttl = app.send_task(TTL_TASK, args=["run-at-once"])
    propagated: dict = {}
    coordinator = threading.Thread(
        target=lambda: propagated.update(record=run(graph_store, broker, full=True))
    )
    coordinator.start()
    summary = ttl.get(timeout=180)
    coordinator.join(timeout=300)
    assert not coordinator.is_alive()

    record = propagated["record"]
    assert record.status == "done" and record.tags_changed > 0
    assert summary["run_id"] == "run-at-once" and summary["columns"] > 0
    stored = graph_store.read("MATCH (c:Column) WHERE c.ttl_run = 'run-at-once' RETURN count(c)")[0][0]
    assert stored == summary["columns"]

    batches, ttl_log = _log(pool, 0), _log(pool, 1)
    # every batch of the run was received by the propagation worker, the TTL task by the TTL worker only
    sent = sum(layer.batches for layer in record.layers)
    assert len(_received(batches, BATCH_TASK)) >= sent > 0
    assert _received(ttl_log, TTL_TASK) == [ttl.id]
    assert _received(batches, TTL_TASK) == [] and _received(ttl_log, BATCH_TASK) == []
    for log in (batches, ttl_log):
        assert "unregistered" not in log.lower() and "discard" not in log.lower(), log[-3000:]


@pytest.mark.parametrize("serving", [TTL_QUEUE, PROPAGATION_QUEUE])
def test_a_message_for_one_queue_waits_for_its_own_worker(pool, graph_store, broker, serving):
    """A worker of the other queue never takes it: it stays queued, whole, until a worker of its queue starts."""
    load(graph_store)
    pool.start(1, queues=serving, loglevel="INFO")
    app = pool.app()
    other = PROPAGATION_QUEUE if serving == TTL_QUEUE else TTL_QUEUE
    # the message for the queue nobody serves goes first: a worker that took it would see it first
    stranded = (
        _probe_batch(app, graph_store)
        if other == PROPAGATION_QUEUE
        else app.send_task(TTL_TASK, args=["run-waits"])
    )
    served = (
        app.send_task(TTL_TASK, args=["run-served"])
        if serving == TTL_QUEUE
        else _probe_batch(app, graph_store)
    )
    served.get(
        timeout=180
    )  # the live worker has consumed its queue past the point the other message was sent

    client = redis.Redis(port=broker.port)
    waiting = client.lrange(other, 0, -1)
    assert len(waiting) == 1 and json.loads(waiting[0])["headers"]["id"] == stranded.id
    assert stranded.state == "PENDING"
    assert stranded.id not in _log(pool, 0)

    pool.start(1, queues=other, loglevel="INFO")
    stranded.get(timeout=180)
    assert stranded.state == "SUCCESS" and client.llen(other) == 0
    assert stranded.id in _log(pool, 1) and stranded.id not in _log(pool, 0)


def test_watershed_worker_serves_the_queues_it_is_given(pool, broker):
    """`watershed worker --queues ttl` is a worker of the ttl queue only; without --queues, of propagation and ttl (nightly only when asked)."""
    app = pool.app()
    for queues, expected in (("ttl", {TTL_QUEUE}), (None, {PROPAGATION_QUEUE, TTL_QUEUE})):
        argv = [sys.executable, "-m", "watershed.api.cli", "worker", "-c", "1"]
        argv += ["--queues", queues] if queues else []
        log = (pool.log_dir / f"cli-{queues}.log").open("w")
        worker = subprocess.Popen(
            argv, env=pool.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            served: set[str] = set()
            deadline = time.monotonic() + 60
            while not served and time.monotonic() < deadline and worker.poll() is None:
                answers = app.control.inspect(timeout=0.5).active_queues() or {}  # one answer per worker
                served = {queue["name"] for queues_of_one in answers.values() for queue in queues_of_one}
            assert served == expected, (
                queues,
                served,
                (pool.log_dir / f"cli-{queues}.log").read_text()[-2000:],
            )
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=30)
