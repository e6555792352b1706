"""Dependencies of the routes: the shared graph, the caller (token or session cookie) and their rights."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from fastapi import Depends, Request

from watershed.api.http.problems import ApiProblem, unauthorized
from watershed.api.http.settings import ApiSettings
from watershed.api.service.accounts.rights import Me, Right
from watershed.api.service.accounts.store import AccountStore
from watershed.graph.errors import first_line
from watershed.graph.store import GraphStore

SESSION_COOKIE = "watershed_session"
CSRF_HEADER = "X-Watershed-CSRF"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass
class Service:
    """What every request shares: settings and the graph connection. Per-user state is in the graph;
    what a process keeps of it is kept under the graph's change stamps (graph.kept)."""

    settings: ApiSettings
    graph: GraphStore
    runs: object = field(default=None)  # api.http.runs.RunLauncher, set by the app

    @cached_property
    def accounts(self) -> AccountStore:
        return AccountStore(self.graph, reuse_seconds=self.settings.api_token_reuse_seconds)

    @cached_property
    def policy(self):
        from watershed.propagation.policy import load_policy

        return load_policy(self.settings.policy_file)

    @cached_property
    def authz(self):
        """Query-time authorization (api.service.authz.AuthzService), keeping its reads under the data stamp."""
        from watershed.api.service.authz import AuthzService

        return AuthzService(self.graph, self.policy, reuse_seconds=self.settings.authz_reuse_seconds)

    def dependencies(self) -> dict[str, str]:
        """Each server the service needs ("graph", "broker") -> "ok" or why it does not answer."""
        states = {}
        for name, ping in (("graph", self.graph.ping), ("broker", self._ping_broker)):
            try:
                ping()
                states[name] = "ok"
            except Exception as exc:  # any failure: /health reports it, it is not the caller's error
                states[name] = f"unavailable: {type(exc).__name__}: {first_line(exc)}"
        return states

    def _ping_broker(self) -> None:
        # the Celery Redis that holds the run state and queues the batches
        self.runs.state.client.ping()


# The dependencies without I/O are coroutines: FastAPI runs those in the event loop instead of
# handing each to the thread pool (a thread hop per dependency per request; see bench/api_bench.py).
async def service(request: Request) -> Service:
    return request.app.state.service


#: what no graph backend stores: NUL (FalkorDB reads C strings) and lone surrogates (not UTF-8)
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: how a JSON body spells them, undecoded: `\u0000` and `\ud800`-`\udfff` (a real surrogate pair
#: is found too, and the body then decoded to tell)
_UNSTORABLE_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def _unstorable(where: str, value: str) -> ApiProblem:
    what = "NUL (\\x00)" if "\x00" in value else "a lone surrogate (not UTF-8)"
    return ApiProblem(400, f"{where}: {ascii(value)[:80]} holds {what}, which no graph can store")


def _json_unstorable(value: Any, where: str) -> ApiProblem | None:
    if isinstance(value, str):
        return _unstorable(where, value) if UNSTORABLE.search(value) else None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        if isinstance(key, str) and UNSTORABLE.search(key):
            return _unstorable(f"{where} (a key)", key)
        found = _json_unstorable(item, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]")
        if found is not None:
            return found
    return None


async def storable_input(request: Request) -> None:
    """The one check of every request's text before a route sees it: a path parameter, a query
    parameter or a JSON body value holding NUL or a lone surrogate is a 400 naming it (it would
    reach the graph, which refuses it deep in a query)."""
    for name, value in request.path_params.items():
        if isinstance(value, str) and UNSTORABLE.search(value):
            raise _unstorable(f"path parameter {name}", value)
    for name, value in request.query_params.multi_items():
        if UNSTORABLE.search(name) or UNSTORABLE.search(value):
            raise _unstorable(f"query parameter {ascii(name)[1:-1]}", value)
    if request.method not in UNSAFE_METHODS:
        return
    body = await request.body()
    if not _UNSTORABLE_ESCAPE.search(body):
        return
    try:
        document = json.loads(body)
    except ValueError:
        return  # not JSON: the route's own parsing answers it
    found = _json_unstorable(document, "body")
    if found is not None:
        raise found


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise unauthorized()
    return value.strip()


def authenticated(request: Request, svc: Service = Depends(service)) -> Me:
    """The authenticated caller of any role: a Bearer token, else the session cookie (with the CSRF
    header on unsafe methods). Routes take `caller`, which refuses a producer; only the OpenLineage
    intake takes this."""
    token = bearer(request)
    if token is not None:
        found = svc.accounts.authenticate(token)
        if found is None:
            raise unauthorized()
        return found[0]
    cookie = request.cookies.get(SESSION_COOKIE)
    if cookie:
        me = svc.accounts.session(cookie)
        if me is None:
            raise unauthorized()
        if request.method in UNSAFE_METHODS and request.headers.get(CSRF_HEADER) != "1":
            raise ApiProblem(
                403, f"a cookie-authenticated {request.method} needs the header {CSRF_HEADER}: 1"
            )
        return me
    raise unauthorized()


def caller(me: Me = Depends(authenticated)) -> Me:
    """The authenticated caller, a producer refused: its token posts lineage and does nothing else."""
    if me.role == "producer":
        raise ApiProblem(403, "viewer right needed")
    return me


def lineage_writer(me: Me = Depends(authenticated)) -> Me:
    """A caller who may post OpenLineage events: a producer, a steward or an admin."""
    if not me.may_post_lineage():
        me.require("steward")
    return me


def needs(right: Right):
    """A dependency giving the caller once they hold `right` (on some database, for a limited one)."""

    async def check(me: Me = Depends(caller)) -> Me:
        me.require(right)
        return me

    check.__name__ = f"needs_{right}"
    return check


viewer = needs("viewer")
steward = needs("steward")
admin = needs("admin")
