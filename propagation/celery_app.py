"""The Celery app of propagation and its one task: recompute a batch of nodes.

Workers: `celery -A propagation.celery_app worker` (or `watershed propagate
worker`); the broker and result backend are the Redis that `watershed
services up` starts, or WATERSHED_CELERY_BROKER.

A task is idempotent (it recomputes its nodes from all their inputs and
writes only what differs), so it is acknowledged late: a task whose worker
dies is handed to another worker, and running it twice changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from celery import Celery

from watershed.graph.backends import open_store
from watershed.graph.settings import GraphSettings
from watershed.propagation.engine import compute_batch
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import Policy
from watershed.propagation.settings import PropagationSettings

TASK_NAME = "propagation.compute_batch"


def make_app(broker_url: str, visibility_seconds: float) -> Celery:
    """A Celery app on `broker_url` (broker and result backend) that knows the propagation task."""
    celery = Celery("watershed_propagation", broker=broker_url, backend=broker_url)
    celery.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=3600,
        broker_transport_options={"visibility_timeout": visibility_seconds},
        broker_connection_retry_on_startup=True,
    )
    celery.task(name=TASK_NAME)(compute_batch_task)
    return celery


_clients: dict[tuple[str, float], Celery] = {}


def app_for(settings: PropagationSettings) -> Celery:
    """The app a coordinator sends with: one per broker, so settings read at call time are honoured."""
    key = (settings.broker_url(), settings.propagation_visibility_seconds)
    if key not in _clients:
        _clients[key] = make_app(*key)
    return _clients[key]


# A worker keeps one connection per graph and one parsed policy per policy text.
_stores: dict[tuple[str, str], GraphTagStore] = {}


def _tag_store(spec: dict[str, Any], policy: dict[str, Any]) -> GraphTagStore:
    spec_key = json.dumps(spec, sort_keys=True)
    policy_text = json.dumps(policy, sort_keys=True)
    key = (spec_key, hashlib.sha256(policy_text.encode()).hexdigest())
    store = _stores.get(key)
    if store is None:
        graph = open_store(GraphSettings(**spec))
        store = GraphTagStore(graph, Policy.model_validate(policy))
        _stores[key] = store
    return store


def compute_batch_task(
    spec: dict, policy: dict, nodes: list[str], run_id: str, token: int, layer: int
) -> list[str]:
    """Recompute `nodes` from all their inputs and write the changes (fenced by `token`); returns the changed nodes."""
    store = _tag_store(spec, policy)
    return compute_batch(store, store.policy, nodes, run_id, token, layer)


# What `celery -A propagation.celery_app worker` runs: the broker from this process's settings.
app = app_for(PropagationSettings())
