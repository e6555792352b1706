"""The HTTP boundary: text no graph can store, bodies over the limit, and what a 405 allows.

NUL and lone surrogates are refused once for every route (400 naming the parameter) instead of
failing deep in a graph query (a 500 that also dropped the client's keep-alive connection).
Requests go through real uvicorn on one kept-alive connection where that matters.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from tests.support.api_service import ThreadServer
from tests.support.routes import PARAM, Connection, every_route, fill
from watershed.graph.server import free_port

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def app_routes():
    return every_route()


def assert_refused(response, data: bytes, where: str) -> None:
    assert response.status == 400, (where, response.status, data[:300])
    assert response.getheader("content-type") == PROBLEM
    detail = json.loads(data)["detail"]
    assert detail.startswith(where) and "no graph can store" in detail, detail


def test_nul_in_any_path_parameter_of_any_route_is_a_400_naming_it(api, app_routes):
    connection = Connection(api.url, api.tokens["admin"])
    checked = 0
    try:
        for method, path, _route in app_routes:
            for name in PARAM.findall(path):
                body = {} if method in ("POST", "PUT", "PATCH") else None
                response, data = connection.request(method, fill(path, bad=name), body)
                assert_refused(response, data, f"path parameter {name}")
                checked += 1
        # still the same connection, and it still serves
        response, data = connection.request("GET", "/api/v1/me")
        assert response.status == 200, data
    finally:
        connection.close()
    assert checked >= 30


def test_nul_in_any_query_parameter_of_any_route_is_a_400_naming_it(api, app_routes):
    connection = Connection(api.url, api.tokens["admin"])
    checked = 0
    try:
        for method, path, route in app_routes:
            names = [p.alias for p in route.dependant.query_params]
            for dependency in route.dependant.dependencies:
                names += [p.alias for p in dependency.query_params]
            for name in names:
                body = {} if method in ("POST", "PUT", "PATCH") else None
                url = f"{fill(path)}?{name}=a%00b"
                response, data = connection.request(method, url, body)
                assert_refused(response, data, f"query parameter {name}")
                checked += 1
    finally:
        connection.close()
    # /search?q=, /audit?actor=, /ttl/advice?table=, /edges?..., every page's cursor
    assert checked >= 20


@pytest.mark.parametrize(
    "method, path, body, where",
    [
        ("POST", "/api/v1/users", {"name": "a\u0000b", "role": "viewer"}, "body.name"),
        ("POST", "/api/v1/authz/roles", {"name": "r\u0000"}, "body.name"),
        ("POST", "/api/v1/authz/groups/g1/users", {"users": ["ok", "u\u0000"]}, "body.users[1]"),
        ("POST", "/api/v1/authz/check", {"sql": "SELECT '\u0000' FROM ods.x", "user": "admin"}, "body.sql"),
        ("POST", "/api/v1/lineage/sql", {"sql": "SELECT 1", "vars": {"a\u0000": "1"}}, "body.vars (a key)"),
        ("PUT", "/api/v1/nodes/ods.x/tags/pii", {"values": ["L1", "\ud800"]}, "body.values[1]"),
        ("POST", "/api/v1/authz/roles", {"name": "r\udfff"}, "body.name"),
    ],
)
def test_nul_or_lone_surrogate_in_a_json_body_is_a_400_naming_the_field(api, method, path, body, where):
    connection = Connection(api.url, api.tokens["admin"])
    try:
        # json.dumps escapes both as \\u0000 / \\ud800, as any JSON client sends them
        response, data = connection.request(method, path, body)
        assert_refused(response, data, where)
        response, data = connection.request("GET", "/api/v1/me")
        assert response.status == 200
    finally:
        connection.close()


def test_a_surrogate_pair_and_other_control_characters_pass_the_check(api):
    with api.client("admin") as client:
        # a real pair (an emoji) is one character: the role name rule answers, not the text check
        answer = client.post("/authz/roles", json={"name": "r\U0001f600"})
        assert "no graph can store" not in answer.text
        assert client.get("/search", params={"q": "tab\tx"}).status_code == 200


@pytest.fixture(scope="module")
def small_limit(api):
    """The same service with a 4 KiB body limit, on a server of its own."""
    from watershed.api.http.app import create_app

    settings = api.settings.model_copy(update={"api_max_body_bytes": 4096})
    server = ThreadServer(create_app(settings, api.graph), free_port())
    server.start()
    try:
        yield f"http://127.0.0.1:{server.server.config.port}"
    finally:
        server.stop()


def oversized_sql() -> bytes:
    return json.dumps({"sql": "SELECT " + ", ".join(["uid"] * 2000) + " FROM ods.x"}).encode()


@pytest.mark.parametrize("path", ["/api/v1/lineage/sql", "/api/v1/users/admin/tokens"])
def test_an_oversized_chunked_body_is_413_like_one_with_content_length(api, small_limit, path):
    body = oversized_sql()
    assert len(body) > 4096
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    parts = urlsplit(small_limit)
    headers = {"Authorization": f"Bearer {api.tokens['admin']}", "Content-Type": "application/json"}
    answers = []
    for streamed in (False, True):
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        try:
            if streamed:
                # no Content-Length: http.client sends Transfer-Encoding: chunked
                connection.request("POST", path, body=iter(chunks), headers=headers, encode_chunked=True)
            else:
                connection.request("POST", path, body=body, headers=headers)
            response = connection.getresponse()
            answers.append((response.status, response.getheader("content-type"), json.loads(response.read())))
        finally:
            connection.close()
    for status, media_type, problem in answers:
        assert (status, media_type) == (413, PROBLEM), problem
        assert "request body over 4096 bytes" in problem["detail"]


def test_a_405_allows_every_method_of_the_path(api):
    connection = Connection(api.url, api.tokens["admin"])
    try:
        response, _ = connection.request("POST", "/api/v1/users/viewer")
        assert response.status == 405
        assert response.getheader("content-type") == PROBLEM
        assert response.getheader("allow") == "DELETE, GET, PATCH"
        response, _ = connection.request("PATCH", "/api/v1/nodes/ods.x/tags/pii")
        assert response.status == 405
        assert response.getheader("allow") == "DELETE, PUT"
    finally:
        connection.close()
