"""The service with its graph server killed: every route answers 503 with Retry-After, naming the
graph server, on a connection that stays open; /health names each dependency that is down.

A FalkorDB and a broker Redis of this module's own, so killing them touches no other test.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal

import pytest
import redis

from tests.support.api_service import ThreadServer
from tests.support.routes import Connection, every_route, fill
from watershed.graph.server import ServerSpec, free_port, start, stop

PROBLEM = "application/problem+json"
#: routes that read no graph while single sign-on is off (this service's settings): what the
#: login page asks, and the browser navigations that answer 404 (docs/sso.md)
WITHOUT_GRAPH = {
    ("GET", "/api/v1/oidc"): 200,
    ("GET", "/api/v1/oidc/login"): 404,
    ("GET", "/api/v1/oidc/callback"): 404,
}


def kill(spec: ServerSpec) -> None:
    # the server says its own pid; reap it (our child) so it does not linger as a zombie
    pid = int(redis.Redis(host=spec.host, port=spec.port).info("server")["process_id"])
    os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


@pytest.fixture(scope="module")
def doomed(tmp_path_factory):
    """(service url, admin token, graph server, broker server), the servers to be killed by the tests."""
    from watershed.api.http.app import create_app
    from watershed.api.http.settings import ApiSettings
    from watershed.api.service.accounts.store import AccountStore
    from watershed.graph.falkordb_store import FalkorDBStore

    data = tmp_path_factory.mktemp("graph-down")
    graph = ServerSpec("falkordb", "127.0.0.1", free_port(), data, with_falkordb=True)
    broker = ServerSpec("redis", "127.0.0.1", free_port(), data, with_falkordb=False)
    start(graph)
    start(broker)
    store = FalkorDBStore(graph.host, graph.port, graph="down")
    store.ensure_schema()
    accounts = AccountStore(store)
    accounts.add("admin", "admin", None, actor="test")
    token = accounts.create_token("admin", "test").token
    settings = ApiSettings(
        falkordb_port=graph.port,
        graph_name="down",
        celery_broker=f"redis://127.0.0.1:{broker.port}/0",
        data_dir=data,
    )
    server = ThreadServer(create_app(settings, store), free_port())
    server.start()
    try:
        yield f"http://127.0.0.1:{server.server.config.port}", token, graph, broker
    finally:
        server.stop()
        store.close()
        stop(graph)
        stop(broker)


def test_with_the_graph_server_killed_every_route_is_a_503_naming_it(doomed):
    url, token, graph, _broker = doomed
    connection = Connection(url, token)
    try:
        response, data = connection.request("GET", "/api/v1/me")
        assert response.status == 200, data
        response, data = connection.request("GET", "/api/v1/health")
        assert response.status == 200, data
        kill(graph)
        answered = 0
        for method, path, _route in every_route():
            body = {} if method in ("POST", "PUT", "PATCH") else None
            if path == "/api/v1/session" and method == "POST":
                body = {"token": token}  # login: checks its body before the graph
            response, data = connection.request(method, fill(path), body)
            if (method, path) in WITHOUT_GRAPH:
                assert response.status == WITHOUT_GRAPH[(method, path)], (method, path, data[:300])
                continue
            assert response.status == 503, (method, path, response.status, data[:300])
            assert response.getheader("content-type") == PROBLEM
            assert response.getheader("retry-after", "").isdigit()
            detail = json.loads(data)["detail"]
            assert f"FalkorDB at 127.0.0.1:{graph.port}" in detail and "unavailable" in detail, detail
            answered += 1
        assert answered >= 50
        # /health: the graph is down, the broker answers
        response, data = connection.request("GET", "/api/v1/health")
        assert response.status == 503 and response.getheader("retry-after", "").isdigit()
        detail = json.loads(data)["detail"]
        assert detail.startswith("graph unavailable") and "broker" not in detail, detail
    finally:
        connection.close()


def test_health_names_the_broker_when_it_is_down_too(doomed):
    url, token, _graph, broker = doomed
    kill(broker)
    connection = Connection(url, token)
    try:
        response, data = connection.request("GET", "/api/v1/health")
        assert response.status == 503
        detail = json.loads(data)["detail"]
        assert "graph unavailable" in detail and "broker unavailable" in detail, detail
    finally:
        connection.close()
