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

from tests.graph.fingerprint import graph_fingerprint
from tests.graph.workload import call_every_route, run_graph_and_engines
from watershed.graph.falkordb_store import REGISTERED_PROPERTIES, FalkorDBStore
from watershed.graph.processes import read_record
from watershed.graph.server import ServerSpec, free_port, start, stop


def _property_keys(store: FalkorDBStore) -> set[str]:
    return {row[0] for row in store.execute("CALL db.propertyKeys()")}


def test_every_write_of_the_product_uses_only_registered_names(tmp_path, graph_store, run_state_redis):
    """The product's whole workload (tests/graph/workload.py: load, tags, propagation, TTL advice,
    accounts and audit through every route): no property name outside the list appears."""
    run_graph_and_engines(graph_store, tmp_path / "warehouse", run_state_redis.port)
    call_every_route(graph_store, run_state_redis.port, tmp_path / "api-data")

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
