"""A live Neo4j 5 for the tests: the embedded Neo4j the set-up installs, started once per session.

Registered by tests/conftest.py (`pytest_plugins`), so every folder shares the one server. It is
started by the code `watershed services up` runs (graph/services.py `neo4j_spec`, `start_spec`,
then graph/server.py), on a free loopback port with its database in a temporary data directory.

- `neo4j_server`: the running server (session): its settings and URI;
- `neo4j_store`: a Neo4jStore on it, emptied before and after the test (Community has one user
  database, so tests share it and wipe it);
- `backend_store`: the same GraphStore contract on both backends, FalkorDB and Neo4j, one test run
  per backend (the test's id ends in `[falkordb]` or `[neo4j]`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from watershed.graph.server import Neo4jSpec, free_port, stop
from watershed.graph.settings import GraphSettings

#: the contract's backends, in the order a parametrized test runs them
BACKENDS = ["falkordb", "neo4j"]


@dataclass
class Neo4jServer:
    settings: GraphSettings
    spec: Neo4jSpec

    @property
    def uri(self) -> str:
        return self.settings.neo4j_uri

    @property
    def data_dir(self) -> Path:
        return self.settings.data_dir


def neo4j_settings(data_dir: Path, port: int | None = None, **overrides) -> GraphSettings:
    """Settings of a local Neo4j under `data_dir` on a free port: what WATERSHED_* would give."""
    return GraphSettings(
        backend="neo4j",
        data_dir=data_dir,
        neo4j_uri=f"bolt://127.0.0.1:{port or free_port()}",
        # small: several test sessions may share the machine
        neo4j_heap="512m",
        neo4j_pagecache="64m",
        **overrides,
    )


@pytest.fixture(scope="session")
def neo4j_server(tmp_path_factory) -> Iterator[Neo4jServer]:
    """The embedded Neo4j for the whole session, started as `services up` starts it."""
    from watershed.graph.services import neo4j_spec, start_spec

    settings = neo4j_settings(tmp_path_factory.mktemp("neo4j-data"))
    spec = neo4j_spec(settings)
    start_spec(spec, settings)
    yield Neo4jServer(settings, spec)
    stop(spec)


@pytest.fixture
def neo4j_store(neo4j_server):
    """A Neo4jStore on the session's Neo4j, with its schema, empty before and after the test."""
    from watershed.graph.neo4j_store import Neo4jStore

    store = Neo4jStore.from_settings(neo4j_server.settings)
    store.ensure_schema()
    store.clear()
    yield store
    store.clear()
    store.close()


@pytest.fixture(params=BACKENDS)
def backend_store(request):
    """The GraphStore contract's store, once on FalkorDB (a graph of its own) and once on Neo4j."""
    return request.getfixturevalue("graph_store" if request.param == "falkordb" else "neo4j_store")
