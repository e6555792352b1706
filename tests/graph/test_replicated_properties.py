"""Every property name a Watershed write uses is registered by `ensure_schema`, so a crash replay maps names right.

The embedded FalkorDB logs each write as its effects (graph/server.py). FalkorDB 4.16 registers the
property names a write mentions even when the write changes nothing (an `UNWIND []`, a MATCH that
finds no row), and then logs nothing: after a crash the replayed log hands out the ids in another
order and later properties come back under the wrong names. `ensure_schema` registers every name up
front with a write that is logged; these tests check that no write of the product introduces a name
outside that list, and that a crash after such no-op writes replays to the same graph.
"""

from __future__ import annotations

import os
import signal

import pytest

from bench.propagation_bench import load_generated
from tests.graph.fingerprint import graph_fingerprint
from watershed.graph.falkordb_store import REGISTERED_PROPERTIES, FalkorDBStore
from watershed.graph.model import HarvestRun
from watershed.graph.processes import read_record
from watershed.graph.server import ServerSpec, free_port, start, stop
from watershed.ingest.generator import generate_warehouse, seed_apps
from watershed.propagation.coordinator import local_runner, propagate
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import default_policy
from watershed.propagation.run_state import RunState
from watershed.propagation.settings import PropagationSettings
from watershed.ttl_advisor.advisor import advise
from watershed.ttl_advisor.graph_uses import catalog_from_graph, index_graph
from watershed.ttl_advisor.store import store_recommendations


def _property_keys(store: FalkorDBStore) -> set[str]:
    return {row[0] for row in store.execute("CALL db.propertyKeys()")}


@pytest.fixture
def run_state_redis(tmp_path):
    spec = ServerSpec("redis", "127.0.0.1", free_port(), tmp_path / "redis", with_falkordb=False)
    start(spec)
    yield spec
    stop(spec)


def test_every_write_of_the_product_uses_only_registered_names(tmp_path, graph_store, run_state_redis):
    """Load, seed, tag, block, propagate, store TTL advice and record runs: no name outside the list appears."""
    directory = tmp_path / "warehouse"
    generate_warehouse(directory, tasks=40, seed=5)
    graph_store.record_run(HarvestRun(id="h1", started_at="2024-01-01T00:00:00"))
    _, catalog = load_generated(graph_store, directory)
    policy = default_policy()
    tags = GraphTagStore(graph_store, policy)
    assert seed_apps(tags, catalog) > 0
    column = next(i for i in sorted(catalog.tables) if i.startswith("ods.")) + ".uid"
    tags.set_tag(column, "pii", ["L2"], by="test")
    tags.block(column, "app", by="test")
    settings = PropagationSettings(
        falkordb_port=graph_store.client.connection.connection_pool.connection_kwargs["port"],
        graph_name=graph_store.graph_name,
        celery_broker=f"redis://127.0.0.1:{run_state_redis.port}/0",
    )
    state = RunState.from_url(settings.broker_url(), graph_store.graph_name)
    assert propagate(graph_store, policy, state, local_runner, full=True, settings=settings).status == "done"
    assert tags.unset_tag(column, "pii") and tags.unblock(column, "app")
    assert propagate(graph_store, policy, state, local_runner, settings=settings).status == "done"
    graph_catalog = catalog_from_graph(graph_store)
    store_recommendations(
        graph_store, advise(index_graph(graph_store, graph_catalog), graph_catalog), "ttl-1"
    )
    graph_store.delete_tasks(graph_store.task_ids()[:3])

    unregistered = _property_keys(graph_store) - REGISTERED_PROPERTIES
    assert not unregistered, (
        f"add these to graph.falkordb_store.REGISTERED_PROPERTIES: {sorted(unregistered)}"
    )


@pytest.fixture
def own_falkordb(tmp_path):
    spec = ServerSpec("falkordb", "127.0.0.1", free_port(), tmp_path / "data", with_falkordb=True)
    start(spec)
    yield spec
    stop(spec)


def test_a_crash_after_writes_that_changed_nothing_replays_the_same_graph(own_falkordb):
    """The FalkorDB 4.16 trap itself: with the names registered, no-op writes cannot shift later properties."""
    store = FalkorDBStore(own_falkordb.host, own_falkordb.port, graph="replay")
    store.ensure_schema()
    store.execute("CREATE (:Column {id: 'a.t.x'}), (:Column {id: 'a.t.y'})")
    # Writes that match nothing but name properties (as fenced tag writes and clears often do).
    store.execute("UNWIND [] AS r MATCH (c:Column {id: r}) SET c.tags = r, c.tag_run = r")
    store.execute(
        "UNWIND [] AS r MATCH (a:Column {id: r}) CREATE (a)-[:FLOWS_TO {task: r, kind: r, key: r}]->(a)"
    )
    store.execute(
        "MATCH (a:Column {id: 'a.t.x'}), (b:Column {id: 'a.t.y'}) "
        "CREATE (a)-[:FLOWS_TO {task: 't1', kind: 'direct', functions: ['upper'], key: null}]->(b) "
        "SET b.tags = '{}', b.tag_run = 'run-1', b.type = 'string'"
    )
    before = graph_fingerprint(store)
    store.close()
    os.kill(read_record(own_falkordb.pid_file).pid, signal.SIGKILL)
    start(own_falkordb)
    after = FalkorDBStore(own_falkordb.host, own_falkordb.port, graph="replay")
    assert graph_fingerprint(after) == before
    after.close()
