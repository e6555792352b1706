"""The steward service under test: a real uvicorn server (in a thread) on a free port, on a FalkorDB graph of its own.

The graph holds the bundled sample warehouse (ingest/samples/warehouse), propagated once, plus
one user per role with a token; tests talk HTTP to it with httpx.
"""

from __future__ import annotations

import itertools

import pytest

from tests.support.api_service import (
    USERS,
    Api,
    ThreadServer,
    load_sample_warehouse,
    make_settings,
    propagate_locally,
)
from watershed.graph.server import free_port

_graphs = itertools.count()


@pytest.fixture(scope="module")
def api(falkordb_server, celery_redis, tmp_path_factory):
    """The service on the propagated sample warehouse, with a user and token per entry of USERS."""
    from watershed.api.http.app import create_app
    from watershed.api.service.accounts.store import AccountStore
    from watershed.graph.falkordb_store import FalkorDBStore

    name = f"api_{next(_graphs)}"
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=name)
    store.ensure_schema()
    settings = make_settings(falkordb_server, celery_redis, name, tmp_path_factory.mktemp("api-data"))
    load_sample_warehouse(store)
    propagate_locally(store, settings)
    accounts = AccountStore(store)
    tokens = {}
    for user, (role, databases) in USERS.items():
        accounts.add(user, role, databases, actor="test")
        tokens[user] = accounts.create_token(user, "test").token
    port = free_port()
    server = ThreadServer(create_app(settings, store), port)
    server.start()
    try:
        yield Api(url=f"http://127.0.0.1:{port}", graph=store, settings=settings, tokens=tokens)
    finally:
        server.stop()
        store.clear()
        store.close()
