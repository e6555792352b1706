"""The docs' pictures of the steward's pages, at 1400 px wide, from a small generated warehouse:

    .venv/bin/python -m bench.screenshots [--out docs/screenshots] [--tasks 40]

Starts its own FalkorDB, loads `ingest.generator`'s warehouse (seed 7) through the SQL analyser,
propagates in this process, makes the changes the pages show (a steward's description and owner,
tag changes for the audit trail, a webhook subscription delivering to a local receiver, a coverage
snapshot), serves the API and UI in this process and photographs each page in Chromium:

    sso-login.png                      the login page with single sign-on configured
    coverage-dashboard.png             the home page: the coverage snapshot
    coverage-not-yet-protected.png     its "not yet protected" columns
    tag-preview.png                    a block of pii previewed before Confirm
    impact.png                         a root table's downstream tables and columns by owner
    column-description-propagated.png  a description and owner come down a direct copy
    column-history.png                 a column's own change history
    audit.png                          the admins' Audit page
    webhooks.png                       the admins' Webhooks page with a subscription's deliveries

No picture holds a secret: tokens are typed into no page (the login form is photographed empty, the
session is a cookie), and the webhook is subscribed over the API, so the page that shows its secret
once is never drawn.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import uvicorn

from bench.ui_render import chromium, login, wait_for
from watershed.graph.server import ServerSpec, free_port, start, stop

REPO = Path(__file__).resolve().parents[1]
GRAPH = "screenshots"
WIDTH, HEIGHT = 1400, 900


def load_warehouse(store, directory: Path, tasks: int) -> None:
    """The generated warehouse's catalog and tasks, analysed by sqlglot (the broken tasks are left out)."""
    from watershed.graph.catalog import Catalog
    from watershed.graph.lineage import SqlTask
    from watershed.ingest.extract import extract_lineage
    from watershed.ingest.generator import generate_warehouse

    generate_warehouse(directory, tasks=tasks, seed=7)
    catalog = Catalog.from_dict(json.loads((directory / "catalog.json").read_text()), source="catalog.json")
    store.upsert_catalog(catalog)
    items = []
    for line in (directory / "tasks.jsonl").read_text().splitlines():
        entry = json.loads(line)
        task = SqlTask(task_id=entry["task_id"], sql=entry["sql"], vars=entry.get("vars") or {})
        lineage = extract_lineage(task, catalog)
        if not lineage.errors:
            items.append((task, lineage))
    store.upsert_tasks(items, catalog)


def propagate(store, settings) -> None:
    from watershed.api.service.propagation_runs import run, run_state, runner_for
    from watershed.propagation.policy import default_policy

    policy = default_policy()
    run(store, policy, run_state(settings), runner_for(settings, policy, local=True), settings, full=True)


@contextmanager
def receiver() -> Iterator[str]:
    """A webhook receiver that takes every POST but those to /down (the pictures need deliveries and a
    dead letter, not the signatures' checks)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(500 if self.path == "/down" else 204)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@contextmanager
def serve(app) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the API did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def pick_columns(store) -> tuple[str, str]:
    """A seeded pii column whose tag reaches a handful of columns downstream (a preview that fits the
    page), and its first direct copy: the preview's and the description's columns."""
    rows = store.read(
        "MATCH (r:Column)-[:TAGGED {origin: 'seed'}]->(:Tag {key: 'pii'}) "
        "MATCH (r)-[:FLOWS_TO {kind: 'direct'}]->(c:Column)-[:TAGGED]->(:Tag {key: 'pii'}) "
        "WITH r, min(c.id) AS copy "
        "MATCH (r)-[:FLOWS_TO*1..4]->(d:Column)-[:TAGGED]->(:Tag {key: 'pii'}) "
        "RETURN r.id, copy, count(DISTINCT d) AS reached ORDER BY reached DESC, r.id"
    )
    if not rows:
        raise RuntimeError("the generated warehouse has no seeded pii column with a direct copy")
    fitting = [row for row in rows if row[2] <= 3] or rows
    return fitting[0][0], fitting[0][1]


def prepare(api: httpx.Client, tokens: dict[str, str], root: str, copy: str, hook_url: str) -> list[str]:
    """The changes the pages show, made over the API as a steward and an admin would; returns the
    webhooks' signing secrets (no picture may show one)."""

    def call(who: str, method: str, path: str, body: object = None) -> object:
        answer = api.request(method, path, json=body, headers={"Authorization": f"Bearer {tokens[who]}"})
        if answer.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {answer.status_code} {answer.text}")
        return answer.json() if answer.content else None

    secrets = [
        call("admin", "POST", "/webhooks", {"url": f"{hook_url}/{path}", "kinds": ["tag.changed"]})["secret"]
        for path in ("watershed", "down")
    ]
    call(
        "steward",
        "PUT",
        f"/nodes/{root}/description",
        {"value": "The customer's contact email, as typed at sign-up."},
    )
    call("steward", "PUT", f"/nodes/{root}/owner", {"value": "crm-team@example.com"})
    call("steward", "PUT", f"/nodes/{root}/tags/pii", {"values": ["L4"]})
    call("steward", "PUT", f"/nodes/{root}/tags/region", {"values": ["eu"]})
    call("steward", "DELETE", f"/nodes/{root}/tags/region")
    return secrets


def shoot(
    out: Path, base: str, tokens: dict[str, str], secrets: list[str], root: str, copy: str, table: str
) -> list[Path]:
    made: list[Path] = []
    with chromium() as browser:

        def page_for(token: str | None):
            context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
            page = context.new_page()
            page.set_default_timeout(30_000)
            if token is not None:
                login(page, base, token)
            return page

        def picture(page, name: str, full: bool = False) -> None:
            page.wait_for_timeout(300)  # fonts and the last redraw
            shown = page.content() + "".join(
                page.evaluate("[...document.querySelectorAll('input')].map((i) => i.value)")
            )
            leaked = [who for who, secret in [*tokens.items(), *enumerate(secrets)] if secret in shown]
            if leaked:
                raise RuntimeError(f"{name} would show a secret ({leaked}); nothing written for it")
            path = out / name
            page.screenshot(path=str(path), full_page=full)
            made.append(path)

        page = page_for(None)
        page.goto(f"{base}/")
        page.wait_for_selector("[data-testid=sso-login]")
        picture(page, "sso-login.png")
        page.context.close()

        page = page_for(tokens["steward"])
        page.wait_for_selector("[data-testid=coverage-unprotected]")
        picture(page, "coverage-dashboard.png")
        page.click("[data-testid=coverage-unprotected-link]")
        page.wait_for_selector("[data-testid=coverage-list-total]")
        picture(page, "coverage-not-yet-protected.png")

        page.goto(f"{base}/#/column/{copy}")
        page.wait_for_selector("[data-testid=metadata-path]")
        wait_for(page, "window.__watershed.renderCount >= 1")
        picture(page, "column-description-propagated.png")

        page.goto(f"{base}/#/column/{root}")
        wait_for(page, "window.__watershed.renderCount >= 1")
        page.click("[data-testid=block-pii]")
        page.wait_for_selector("[data-testid=preview-summary]")
        picture(page, "tag-preview.png")
        page.click("[data-testid=preview-cancel]")
        page.locator("[data-testid=node-history] li, [data-testid=node-history] tr").first.wait_for()
        page.locator("[data-testid=node-history]").scroll_into_view_if_needed()
        picture(page, "column-history.png")

        page.goto(f"{base}/#/impact/{table}")
        page.wait_for_selector("[data-testid=impact-summary]")
        picture(page, "impact.png")
        page.context.close()

        page = page_for(tokens["admin"])
        page.goto(f"{base}/#/audit?actor=sam")  # the steward's changes (the set-up's own entries left out)
        page.wait_for_selector(".audit-page li, .audit-page tr")
        picture(page, "audit.png")
        page.goto(f"{base}/#/webhooks")
        page.click("tr[data-subscription]:has-text('/watershed') button[data-action=deliveries]")
        page.wait_for_selector("[data-testid=webhook-dead-letters] tr[data-dead]")
        page.wait_for_selector("[data-testid=webhook-deliveries] tr[data-outcome=delivered]")
        picture(page, "webhooks.png")
        page.context.close()
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--tasks", type=int, default=40, help="the generated warehouse's tasks")
    args = parser.parse_args()
    from watershed.api.http.app import create_app
    from watershed.api.service.accounts.store import AccountStore
    from watershed.api.service.notifications import delivery
    from watershed.api.service.notifications.settings import WebhookSettings
    from watershed.api.service.settings import ApiSettings
    from watershed.graph.falkordb_store import FalkorDBStore

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="watershed-screenshots-") as tmp:
        work = Path(tmp)
        spec = ServerSpec("falkordb", "127.0.0.1", free_port(), work / "falkordb", with_falkordb=True)
        start(spec)
        store = FalkorDBStore(spec.host, spec.port, graph=GRAPH)
        try:
            store.ensure_schema()
            load_warehouse(store, work / "warehouse", args.tasks)
            settings = ApiSettings(
                falkordb_port=spec.port,
                graph_name=GRAPH,
                celery_broker=f"redis://127.0.0.1:{spec.port}/1",  # the run state only: runs are local
                data_dir=work / "api",
                # the login page's button only: no picture signs in through a provider
                oidc_issuer="https://sso.example.com",
                oidc_provider_name="Example IdP",
                oidc_client_id="watershed",
            )
            propagate(store, settings)
            root, copy = pick_columns(store)
            table = root.rsplit(".", 1)[0]
            accounts = AccountStore(store)
            tokens = {}
            for name, role in (("ada", "admin"), ("sam", "steward")):
                accounts.add(name, role, None, actor="screenshots")
                tokens[role] = accounts.create_token(name, actor="screenshots").token
            with receiver() as hook_url, serve(create_app(settings, store)) as base:
                with httpx.Client(base_url=f"{base}/api/v1", timeout=60) as api:
                    secrets = prepare(api, tokens, root, copy, hook_url)
                    propagate(store, settings)  # the description, owner and pii=L4 come down
                    # the steward's "Compute now", as the nightly's coverage step would
                    answer = api.post(
                        "/coverage/refresh", headers={"Authorization": f"Bearer {tokens['steward']}"}
                    )
                    answer.raise_for_status()
                delivery.deliver_due(store)
                # the failing subscription's deliveries, past their backoff, on their last attempt
                delivery.deliver_due(store, WebhookSettings(webhook_max_attempts=1), now=time.time() + 3600)
                made = shoot(args.out, base, tokens, secrets, root, copy, table)
        finally:
            store.clear()
            store.close()
            stop(spec)
    for path in made:
        print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


if __name__ == "__main__":
    main()
