"""The real stack behind the browser tests: FalkorDB, Redis + a Celery worker, the API in uvicorn, Chromium.

One graph for the session holds a small pii story and a 2,000-column fan-out:

    ods.users.email -> dwd.users.mail_u -> dws.contacts.contact -> ads.report.report_contact
                    -> app.export.exported -> app.archive.kept

`email` is seeded `pii` by the default policy's name rule; a full propagation run
started through the API carries it down the chain before any test runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.ui_render import chromium, fan_out_tasks
from tests.support.processes import stop_group
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.graph.server import free_port
from watershed.ingest.extract import extract_lineage

REPO = Path(__file__).resolve().parents[2]

STORY_TASKS = {
    "t_users": "INSERT OVERWRITE TABLE dwd.users SELECT uid, upper(email) AS mail_u FROM ods.users",
    "t_contacts": "INSERT OVERWRITE TABLE dws.contacts SELECT uid, concat(mail_u, '') AS contact FROM dwd.users",
    "t_report": "INSERT OVERWRITE TABLE ads.report SELECT uid, contact AS report_contact FROM dws.contacts",
    "t_export": "INSERT OVERWRITE TABLE app.export SELECT uid, report_contact AS exported FROM ads.report",
    "t_archive": "INSERT OVERWRITE TABLE app.archive SELECT uid, exported AS kept FROM app.export",
}
#: column types for the story's tables: the table page's DDL needs them
STORY_CATALOG = {
    "tables": {
        "ods.users": {
            "columns": {"uid": "bigint", "email": "string"},
            "layer": "ods",
            "owner": "crm",
            "format": "orc",
        },
        "dwd.users": {"columns": {"uid": "bigint", "mail_u": "string"}, "layer": "dwd", "format": "orc"},
        "dws.contacts": {"columns": {"uid": "bigint", "contact": "string"}, "layer": "dws", "format": "orc"},
        "ads.report": {
            "columns": {"uid": "bigint", "report_contact": "string"},
            "layer": "ads",
            "format": "orc",
        },
        "app.export": {"columns": {"uid": "bigint", "exported": "string"}, "format": "orc"},
        "app.archive": {"columns": {"uid": "bigint", "kept": "string"}, "format": "orc"},
    }
}
#: the column the steward story opens: 3 upstream hops, 2 downstream
STORY_COLUMN = "ads.report.report_contact"
UPSTREAM = ["dws.contacts.contact", "dwd.users.mail_u", "ods.users.email"]
DOWNSTREAM = ["app.export.exported", "app.archive.kept"]
#: the root of the fan-out: 2,000 columns downstream in 2 hops
BIG_COLUMN = "big.src.c"


@dataclass
class WebStack:
    base_url: str
    graph: object
    tokens: dict[str, str] = field(default_factory=dict)

    def call(self, method: str, path: str, token: str, body: object = None) -> tuple[int, object]:
        """An API call with a bearer token (the fixture's own set-up and checks, not the browser's)."""
        request = urllib.request.Request(
            f"{self.base_url}/api/v1{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            return error.code, json.loads(raw) if raw else None

    def tag_keys(self, node: str) -> set[str]:
        status, tags = self.call("GET", f"/nodes/{node}/tags", self.tokens["admin"])
        assert status == 200, tags
        return {tag["key"] for tag in tags["tags"]}

    def wait_for_run(self, run_id: str, timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, run = self.call("GET", f"/propagation/runs/{run_id}", self.tokens["admin"])
            assert status == 200, run
            if run["status"] in ("done", "failed"):
                return run
            time.sleep(0.3)
        raise AssertionError(f"propagation run {run_id} did not finish within {timeout} s")


def _load(graph, tasks: dict[str, str], catalog: Catalog | None = None) -> None:
    if catalog is not None:
        graph.upsert_catalog(catalog)
    items = []
    for task_id, sql in tasks.items():
        task = SqlTask(task_id=task_id, sql=sql)
        lineage = extract_lineage(task, catalog)
        assert not lineage.errors, lineage.errors
        items.append((task, lineage))
    graph.upsert_tasks(items, catalog)


def _wait_healthy(base_url: str, process: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the API exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{base_url}/api/v1/health", timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the API did not answer within {timeout} s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def web_stack(falkordb_server, celery_redis, workers, tmp_path_factory):
    from watershed.api.service.accounts.store import AccountStore
    from watershed.graph.falkordb_store import FalkorDBStore

    graph = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph="web_ui")
    graph.ensure_schema()
    graph.clear()
    graph.ensure_schema()
    _load(graph, STORY_TASKS, Catalog.from_dict(STORY_CATALOG))
    _load(graph, fan_out_tasks(root_table="big.src", column="c"))

    accounts = AccountStore(graph)
    tokens = {}
    for name, role in (("ada", "admin"), ("sam", "steward"), ("vic", "viewer")):
        accounts.add(name, role, None, actor="tests")
        tokens[role] = accounts.create_token(name, actor="tests").token

    directory = tmp_path_factory.mktemp("web-api")
    port = free_port()
    env = {
        **os.environ,
        "WATERSHED_FALKORDB_HOST": falkordb_server.host,
        "WATERSHED_FALKORDB_PORT": str(falkordb_server.port),
        "WATERSHED_GRAPH_NAME": "web_ui",
        "WATERSHED_CELERY_BROKER": f"redis://127.0.0.1:{celery_redis.port}/0",
        "WATERSHED_DATA_DIR": str(directory),
        "PYTHONPATH": str(REPO),
    }
    log = directory / "api.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "watershed.api.http.app:create_app",
             "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=directory,
            start_new_session=True,
        )  # fmt: skip
    stack = WebStack(base_url=f"http://127.0.0.1:{port}", graph=graph, tokens=tokens)
    try:
        _wait_healthy(stack.base_url, process, log)
        status, run = stack.call("POST", "/propagation/runs", tokens["admin"], {"full": True})
        assert status == 202, run
        run = stack.wait_for_run(run["run_id"])
        assert run["status"] == "done", run
        for node in [STORY_COLUMN, *DOWNSTREAM]:
            assert "pii" in stack.tag_keys(node), f"{node} has no pii after the first propagation"
        yield stack
    finally:
        stop_group(process, timeout=15)
        graph.clear()
        graph.close()


@pytest.fixture(scope="session")
def browser():
    with chromium() as browser:
        yield browser


#: what the page must work under: no inline script or style, nothing from another origin
STRICT_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


@contextlib.contextmanager
def strict_page(browser, base_url: str):
    """A fresh browser context (no cookies) and page; the shell at `base_url` is served with
    STRICT_CSP. Fails on leaving if the page broke that policy or threw an uncaught error."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    page.on(
        "console",
        lambda message: problems.append(message.text) if "Content Security Policy" in message.text else None,
    )

    def strict(route):
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers, "content-security-policy": STRICT_CSP})

    page.route(f"{base_url}/", strict)
    page.set_default_timeout(20_000)
    yield page
    context.close()
    assert not problems, problems


@pytest.fixture
def page(browser, web_stack):
    """A strict page (`strict_page`) on the web stack."""
    with strict_page(browser, web_stack.base_url) as fresh:
        yield fresh


class Screenshots:
    """Numbered screenshots of a test's steps under its output directory."""

    def __init__(self, page, directory: Path) -> None:
        self.page, self.directory, self.count = page, directory, 0
        directory.mkdir(parents=True, exist_ok=True)

    def __call__(self, step: str) -> Path:
        self.count += 1
        path = self.directory / f"{self.count:02d}-{step}.png"
        self.page.screenshot(path=str(path))
        return path


@pytest.fixture
def shots(page, tmp_path):
    screenshots = Screenshots(page, tmp_path / "screenshots")
    yield screenshots
    print(f"screenshots: {screenshots.directory}")
