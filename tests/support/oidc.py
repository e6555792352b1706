"""A real OpenID Connect provider (tests/support/oidc_provider: oidc-provider under Node) and the
steward service signing in through it, for the single sign-on tests (API and browser).

The provider's accounts carry their groups in the ID token; the service maps three of them:

    alice   watershed-admins            -> admin (every database)
    olga    ods-stewards                -> steward limited to ods
    mia     ods-stewards, watershed-admins -> admin (the highest role of her groups)
    nick    marketing                   -> no mapped group: refused
    ted     watershed-admins            -> refused where a local (token) account ted exists
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import urljoin

import httpx

from tests.support.api_service import ThreadServer
from tests.support.processes import stop_group
from watershed.graph.server import free_port

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc_provider"
CLIENT_ID = "watershed"

ACCOUNTS = {
    "alice": {"groups": ["watershed-admins"]},
    "olga": {"groups": ["ods-stewards"]},
    "mia": {"groups": ["ods-stewards", "watershed-admins"]},
    "nick": {"groups": ["marketing"]},
    "ted": {"groups": ["watershed-admins"]},
}
GROUPS = {
    "watershed-admins": {"role": "admin"},
    "ods-stewards": {"role": "steward", "databases": ["ods"]},
}


@dataclass
class Provider:
    issuer: str
    client_secret: str
    log: Path

    def next_id_token(self, mode: str) -> None:
        """Make the provider's next token response carry a forged ID token (provider.js MODES)."""
        response = httpx.post(f"{self.issuer}/test/next-id-token", data={"mode": mode}, timeout=10)
        assert response.status_code == 204, response.text


@contextlib.contextmanager
def running_provider(directory: Path, service_base: str) -> Iterator[Provider]:
    """The provider on a free port, its one client redirecting to `service_base`'s callback."""
    node = shutil.which("node")
    if node is None or not (PROVIDER_DIR / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError(
            f"the OpenID provider needs node and `npm ci --prefix {PROVIDER_DIR}` (scripts/bootstrap.sh)"
        )
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    secret = "client-secret-" + directory.name
    config = {
        "issuer": issuer,
        "clients": [
            {
                "client_id": CLIENT_ID,
                "client_secret": secret,
                "redirect_uris": [f"{service_base}/api/v1/oidc/callback"],
                "post_logout_redirect_uris": [f"{service_base}/"],
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
            }
        ],
        "accounts": {
            name: {"preferred_username": name, "email": f"{name}@example.com", "name": name.title(), **claims}
            for name, claims in ACCOUNTS.items()
        },
    }
    (directory / "provider.json").write_text(json.dumps(config))
    log = directory / "provider.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [node, str(PROVIDER_DIR / "provider.js"), str(port), str(directory / "provider.json")],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=PROVIDER_DIR,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the OpenID provider did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield Provider(issuer=issuer, client_secret=secret, log=log)
    finally:
        stop_group(process, timeout=10)


@dataclass
class SsoService:
    url: str
    graph: object
    provider: Provider


@contextlib.contextmanager
def sso_service(
    falkordb_server,
    celery_redis,
    directory: Path,
    graph_name: str,
    groups: dict | None = None,
    own_graph: bool = True,
) -> Iterator[SsoService]:
    """The steward service (uvicorn in a thread) signing in through a running provider with `groups`
    (default GROUPS). On a graph of its own (cleared after), or, with own_graph=False, on a graph
    another fixture owns (left as it is: e.g. a second API on the web stack's session graph)."""
    from watershed.api.http.app import create_app
    from watershed.api.http.settings import ApiSettings
    from watershed.graph.falkordb_store import FalkorDBStore

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=graph_name)
    store.ensure_schema()
    with running_provider(directory, base) as provider:
        secret_file = directory / "client-secret"
        secret_file.write_text(provider.client_secret + "\n")
        settings = ApiSettings(
            falkordb_port=falkordb_server.port,
            graph_name=graph_name,
            celery_broker=f"redis://127.0.0.1:{celery_redis.port}/0",
            data_dir=directory,
            oidc_issuer=provider.issuer,
            oidc_provider_name="Test IdP",
            oidc_client_id=CLIENT_ID,
            oidc_client_secret_file=secret_file,
            oidc_groups=GROUPS if groups is None else groups,
        )
        server = ThreadServer(create_app(settings, store), port)
        server.start()
        try:
            yield SsoService(url=base, graph=store, provider=provider)
        finally:
            server.stop()
            if own_graph:
                store.clear()
            store.close()


def provider_sign_in(page, login: str) -> None:
    """From Watershed's login page: its SSO button, then the provider's own sign-in form (any
    password) and its consent form."""
    page.click("[data-testid=sso-login]")
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.wait_for_selector("form input[name=prompt][value=consent]", state="attached")
    page.click("button[type=submit]")


# ------------------------------------------------------------ a browser made of httpx


def _form(page: httpx.Response) -> tuple[str, dict[str, str]]:
    """The action and hidden fields of the first form of one of the provider's pages."""
    text = page.text
    found = re.search(r'<form[^>]*action="([^"]+)"', text)
    assert found, f"no form on {page.url}:\n{text[:2000]}"
    fields = {
        unescape(name): unescape(value)
        for name, value in re.findall(
            r'<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"', text
        )
    }
    return urljoin(str(page.url), unescape(found.group(1))), fields


def follow(client: httpx.Client, response: httpx.Response, stop_at: str) -> httpx.Response:
    """Follow redirects until one leads to a URL starting with `stop_at` (not fetched), or a page."""
    while response.is_redirect:
        target = urljoin(str(response.url), response.headers["location"])
        if target.startswith(stop_at):
            return response
        response = client.get(target)
    return response


def sign_in(client: httpx.Client, service: SsoService, login: str) -> httpx.Response:
    """Through the provider's own pages: the service's login redirect, the provider's sign-in form
    (`login`, any password), its consent form; returns the provider's redirect to the callback
    (not yet followed, so a test can change it)."""
    start = client.get(f"{service.url}/api/v1/oidc/login")
    assert start.status_code == 303, start.text
    callback = f"{service.url}/api/v1/oidc/callback"
    page = follow(client, start, callback)
    for _ in range(3):  # sign-in, then consent (once per account and client)
        if page.is_redirect:
            return page
        assert page.status_code == 200, page.text[:2000]
        action, fields = _form(page)
        if fields.get("prompt") == "login":
            fields.update(login=login, password="any")
        page = follow(client, client.post(action, data=fields), callback)
    raise AssertionError(f"the provider never sent the browser back:\n{page.text[:2000]}")
