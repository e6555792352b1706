"""Every operation of the HTTP API and a kept-alive connection to call them on (tests/api/http/:
the boundary and the graph-down tests walk every route)."""

from __future__ import annotations

import http.client
import importlib
import json
import pkgutil
import re
from urllib.parse import quote, urlsplit

from fastapi.routing import APIRoute

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
