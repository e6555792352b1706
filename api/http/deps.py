"""Dependencies of the routes: the shared graph, the caller (token or session cookie) and their rights."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from fastapi import Depends, Request

from watershed.api.accounts.rights import Me, Right
from watershed.api.accounts.store import AccountStore
from watershed.api.http.problems import ApiProblem, unauthorized
from watershed.api.http.settings import ApiSettings
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
        """Query-time authorization (api.authz.AuthzService), keeping its reads under the data stamp."""
        from watershed.api.authz import AuthzService

        return AuthzService(self.graph, self.policy, reuse_seconds=self.settings.authz_reuse_seconds)


# The dependencies without I/O are coroutines: FastAPI runs those in the event loop instead of
# handing each to the thread pool (a thread hop per dependency per request; see bench/api_bench.py).
async def service(request: Request) -> Service:
    return request.app.state.service


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise unauthorized()
    return value.strip()


def caller(request: Request, svc: Service = Depends(service)) -> Me:
    """The authenticated caller: a Bearer token, else the session cookie (with the CSRF header on unsafe methods)."""
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
