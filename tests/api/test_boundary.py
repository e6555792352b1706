"""The HTTP boundary: text no graph can store, bodies over the limit, and what a 405 allows.

NUL and lone surrogates are refused once for every route (400 naming the parameter) instead of
failing deep in a graph query (a 500 that also dropped the client's keep-alive connection).
Requests go through real uvicorn on one kept-alive connection where that matters.
"""

from __future__ import annotations

import http.client
import importlib
import json
import pkgutil
import re
from urllib.parse import quote, urlsplit

import pytest
from fastapi.routing import APIRoute

from tests.api.conftest import ThreadServer, api  # noqa: F401 - the service fixture
from watershed.graph.server import free_port

PROBLEM = "application/problem+json"
PARAM = re.compile(r"{(\w+)(?::\w+)?}")


class Connection:
    """One HTTP/1.1 connection kept alive across requests: a request after a reset would fail."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.http = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.token = token
        self.socket = None

    def request(self, method: str, path: str, body=None, headers: dict | None = None):
        headers = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        if isinstance(body, (dict, list)):
            body, headers["Content-Type"] = json.dumps(body), "application/json"
        self.http.request(method, path, body=body, headers=headers)
        if self.socket is None:
            self.socket = self.http.sock
        # the same socket as the first request's: the server kept the connection
        assert self.http.sock is self.socket, f"{method} {path}: the connection was replaced"
        response = self.http.getresponse()
        data = response.read()
        return response, data

    def close(self) -> None:
        self.http.close()


def every_route() -> list[tuple[str, str, APIRoute]]:
    """(method, path, route) of every operation of the API, from every module of its routers."""
    from watershed.api.http import routers

    found = []
    for module in pkgutil.iter_modules(routers.__path__):
        router = importlib.import_module(f"{routers.__name__}.{module.name}").router
        for route in router.routes:
            if isinstance(route, APIRoute):
                found += [(method, "/api/v1" + route.path, route) for method in sorted(route.methods)]
    return found


def fill(path: str, bad: str | None = None, value: str = "ods.x") -> str:
    """The path with every parameter set to `value`, and the one named `bad` to a text holding NUL."""

    def one(match: re.Match[str]) -> str:
        return quote("a\x00b" if match.group(1) == bad else value, safe="")

    return PARAM.sub(one, path)


@pytest.fixture(scope="module")
def app_routes():
    return every_route()


def assert_refused(response, data: bytes, where: str) -> None:
    assert response.status == 400, (where, response.status, data[:300])
    assert response.getheader("content-type") == PROBLEM
    detail = json.loads(data)["detail"]
    assert detail.startswith(where) and "no graph can store" in detail, detail


def test_nul_in_any_path_parameter_of_any_route_is_a_400_naming_it(api, app_routes):  # noqa: F811
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


def test_nul_in_any_query_parameter_of_any_route_is_a_400_naming_it(api, app_routes):  # noqa: F811
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
def test_nul_or_lone_surrogate_in_a_json_body_is_a_400_naming_the_field(api, method, path, body, where):  # noqa: F811
    connection = Connection(api.url, api.tokens["admin"])
    try:
        # json.dumps escapes both as \\u0000 / \\ud800, as any JSON client sends them
        response, data = connection.request(method, path, body)
        assert_refused(response, data, where)
        response, data = connection.request("GET", "/api/v1/me")
        assert response.status == 200
    finally:
        connection.close()


def test_a_surrogate_pair_and_other_control_characters_pass_the_check(api):  # noqa: F811
    with api.client("admin") as client:
        # a real pair (an emoji) is one character: the role name rule answers, not the text check
        answer = client.post("/authz/roles", json={"name": "r\U0001f600"})
        assert "no graph can store" not in answer.text
        assert client.get("/search", params={"q": "tab\tx"}).status_code == 200


@pytest.fixture(scope="module")
def small_limit(api):  # noqa: F811
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
def test_an_oversized_chunked_body_is_413_like_one_with_content_length(api, small_limit, path):  # noqa: F811
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


def test_a_405_allows_every_method_of_the_path(api):  # noqa: F811
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
