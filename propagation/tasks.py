"""Propagation's Celery task, as a plain function: recompute a batch of nodes.

The one Celery app (`watershed.api.service.celery_app`) registers it under `TASK_NAME`
and routes it to the `propagation` queue; nothing here knows the app, so the
coordinator and the workers share one app and one set of queues.

A task is idempotent (it recomputes its nodes from all their inputs and writes
only what differs), so the app acknowledges it late: a task whose worker dies
is handed to another worker, and running it twice changes nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from watershed.graph.backends import open_store
from watershed.graph.settings import GraphSettings
from watershed.propagation.engine import compute_batch
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import Policy

TASK_NAME = "propagation.compute_batch"

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
