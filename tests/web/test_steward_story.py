"""The steward's story end to end in Chromium, on the real stack (FalkorDB, a Celery worker, a real
OpenID provider, a real webhook receiver): sign in through the provider, see the coverage dashboard,
find the story's column by search and follow "not yet protected" to it, read its lineage, an edge's SQL and why it is pii,
preview a block of pii and confirm it, watch the run it starts, see the signed webhook of the change
arrive, see pii gone downstream, and export the column's impact list as CSV."""

from __future__ import annotations

import csv
import io
import json
import time

import pytest

from bench.ui_render import wait_for
from tests.support.oidc import provider_sign_in, sso_service
from tests.support.webhook_receiver import start_receiver
from tests.web.conftest import DOWNSTREAM, STORY_COLUMN, UPSTREAM, Screenshots, strict_page

GRAPH_NODES = "window.__watershed.graph.cy.nodes().map((n) => n.id())"
#: olga's provider group made a steward of every database, so she may block on ads.report
STORY_GROUPS = {"watershed-admins": {"role": "admin"}, "ods-stewards": {"role": "steward"}}


@pytest.fixture(scope="module")
def sso_url(web_stack, falkordb_server, celery_redis, tmp_path_factory):
    """A second API on the web stack's graph that signs in through a real OpenID provider (the web
    stack's API, tokens only, keeps serving the other tests); its runs go to the session's worker."""
    directory = tmp_path_factory.mktemp("story-sso")
    with sso_service(
        falkordb_server, celery_redis, directory, "web_ui", groups=STORY_GROUPS, own_graph=False
    ) as service:
        yield service.url


@pytest.fixture
def receiver(web_stack):
    """A real local receiver subscribed (by an admin, over the API) to tag changes; unsubscribed after."""
    receiver, server = start_receiver()
    admin = web_stack.tokens["admin"]
    status, made = web_stack.call(
        "POST", "/webhooks", admin, {"url": f"{receiver.url}/ok", "kinds": ["tag.changed"]}
    )
    assert status == 201, made
    receiver.secrets["/ok"] = made["secret"]
    try:
        yield receiver
    finally:
        web_stack.call("DELETE", f"/webhooks/{made['id']}", admin)
        server.shutdown()


@pytest.fixture
def unblocks_afterwards(web_stack):
    """The graph is the session's: the story's block is taken back and propagated after it, so the
    browser tests that run later (test_tag_preview_ui, test_viewer) find pii on the story's column."""
    yield
    steward = web_stack.tokens["steward"]
    status, _ = web_stack.call("DELETE", f"/nodes/{STORY_COLUMN}/blocks/pii", steward)
    assert status == 200
    status, run = web_stack.call("POST", "/propagation/runs", steward, {})
    assert status == 202, run
    assert web_stack.wait_for_run(run["run_id"])["status"] == "done"
    assert "pii" in web_stack.tag_keys(STORY_COLUMN)


def sign_in_through_provider(page, login: str) -> None:
    provider_sign_in(page, login)
    page.wait_for_selector("[data-testid=role]")


def click_edge(page, source: str, target: str) -> None:
    """Clicks the drawn edge source -> target where it is on screen (its midpoint)."""
    point = page.evaluate(
        """([source, target]) => {
            const cy = window.__watershed.graph.cy;
            const edge = cy.edges().filter((e) => e.data('source') === source && e.data('target') === target)[0];
            cy.zoom(1.5);
            cy.center(edge);
            const box = cy.container().getBoundingClientRect();
            const mid = edge.renderedMidpoint();
            return { x: box.left + mid.x, y: box.top + mid.y };
        }""",
        [source, target],
    )
    page.wait_for_timeout(200)  # the redraw after the zoom
    page.mouse.click(point["x"], point["y"])


def wait_for_post(receiver, node: str, timeout: float = 60.0):
    """The receiver's first tag.changed POST about `node` (the API process sends its outbox while it serves)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for post in receiver.at("/ok"):
            body = json.loads(post.body)
            if body["kind"] == "tag.changed" and body["data"]["node"] == node:
                return post, body
        time.sleep(0.1)
    raise AssertionError(f"no tag.changed webhook for {node} within {timeout} s: {receiver.received}")


def test_steward_signs_in_finds_an_unprotected_column_blocks_pii_and_exports_its_impact(
    web_stack, sso_url, receiver, unblocks_afterwards, browser, tmp_path
):
    assert "pii" in web_stack.tag_keys(STORY_COLUMN), "the story needs the column tagged pii first"
    began = time.monotonic()
    with strict_page(browser, sso_url) as page:
        shots = Screenshots(page, tmp_path / "screenshots")

        # sign in through the OpenID provider: the provider's group makes olga a steward
        page.goto(f"{sso_url}/")
        shots("login")
        sign_in_through_provider(page, "olga")
        assert page.text_content("[data-testid=role]") == "steward"
        assert page.request.get(f"{sso_url}/api/v1/me").json()["name"] == "olga"

        # the home page is the coverage dashboard; she computes today's snapshot
        page.wait_for_selector("[data-testid=dashboard]")
        page.click("[data-testid=coverage-refresh]")
        page.wait_for_selector("[data-testid=coverage-unprotected-link]")
        status, coverage = web_stack.call("GET", "/coverage", web_stack.tokens["viewer"])
        assert status == 200, coverage
        assert (
            int(page.text_content("[data-testid=coverage-unprotected] .value"))
            == (coverage["snapshot"]["totals"]["unprotected"])
        )
        shots("dashboard")

        # search finds the column too
        page.click("header.nav a:text-is('Search')")
        page.fill("input[name=q]", "report_contact")
        page.click("form button[type=submit]")
        page.wait_for_selector(f"[data-testid=search-results] a:text-is('{STORY_COLUMN}')")
        shots("search")

        # "not yet protected" lists the story's column; its row leads to its page
        page.click("header.nav a:text-is('Coverage')")
        page.click("[data-testid=coverage-unprotected-link]")
        page.wait_for_selector("[data-testid=coverage-columns]")
        listed = [
            row.get_attribute("data-column")
            for row in page.query_selector_all("[data-testid=coverage-columns] tbody tr")
        ]
        assert {STORY_COLUMN, *UPSTREAM, *DOWNSTREAM} <= set(listed), listed
        shots("not-yet-protected")
        page.click(f"[data-testid=coverage-columns] tr[data-column='{STORY_COLUMN}'] a")
        assert page.url.endswith(f"#/column/{STORY_COLUMN}")

        # its lineage: 3 upstream hops and what lies downstream are drawn
        wait_for(page, "window.__watershed.renderCount >= 1")
        drawn = set(page.evaluate(GRAPH_NODES))
        assert {STORY_COLUMN, *UPSTREAM, *DOWNSTREAM} <= drawn, drawn
        assert page.locator("[data-testid=tags] li[data-tag=pii]").is_visible()
        shots("lineage")

        # an edge shows its task, kind and SQL
        click_edge(page, UPSTREAM[0], STORY_COLUMN)
        page.wait_for_selector("[data-testid=edge-task]")
        status, details = web_stack.call(
            "GET", f"/edges?source={UPSTREAM[0]}&target={STORY_COLUMN}", web_stack.tokens["viewer"]
        )
        assert status == 200 and len(details) == 1, details
        assert page.text_content("[data-testid=edge-task]") == details[0]["task"]["id"] == "t_report"
        assert page.text_content("[data-testid=edge-kind]") == details[0]["kind"] == "direct"
        assert "INSERT OVERWRITE TABLE ads.report" in details[0]["task"]["sql"]
        assert "INSERT OVERWRITE TABLE ads.report" in page.text_content("[data-testid=edge-sql]")
        shots("edge")

        # why the column is pii: the path back to the seeded ods.users.email
        page.click("[data-testid=why-pii]")
        tree = page.wait_for_selector("[data-testid=why-tree]")
        for node in [STORY_COLUMN, *UPSTREAM]:
            assert tree.query_selector(f"li[data-node='{node}']"), node
        shots("why-path")

        # block pii on the column: the preview names the columns the next run changes, then Confirm
        page.goto(f"{sso_url}/#/column/{STORY_COLUMN}")
        page.click("[data-testid=block-pii]")
        summary = page.wait_for_selector("[data-testid=preview-summary]").text_content()
        previewed = {
            row.get_attribute("data-node")
            for row in page.query_selector_all("[data-testid=preview] tr[data-node][data-key=pii]")
        }
        assert previewed == {STORY_COLUMN, *DOWNSTREAM}, (summary, previewed)
        assert "pii" in web_stack.tag_keys(STORY_COLUMN)  # previewing changed nothing
        shots("preview")
        page.click("[data-testid=preview-confirm]")
        page.wait_for_selector("[data-testid=tags] li[data-block=pii]")

        # the change's webhook arrives at the receiver, signed with the subscription's secret
        post, body = wait_for_post(receiver, STORY_COLUMN)
        assert post.signed
        assert body["data"] | {"action": "block", "key": "pii", "actor": "olga"} == body["data"], body

        # run propagation from the column page and watch the run on the Runs page
        with page.expect_response(
            lambda r: r.url.endswith("/api/v1/propagation/runs") and r.request.method == "POST"
        ) as sent:
            page.click("[data-testid=run-propagation]")
        assert sent.value.status == 202, sent.value.text()
        run_id = sent.value.json()["run_id"]
        page.click(f"[data-testid=run-started] a:text-is('{run_id}')")
        page.wait_for_selector(f".run[data-run='{run_id}']")
        shots("run-started")
        page.wait_for_selector(f".run[data-run='{run_id}'][data-status=done]", timeout=90_000)
        shots("run-done")

        # the tag is gone from the column and downstream, and still on the upstream seed
        for node in [STORY_COLUMN, *DOWNSTREAM]:
            page.goto(f"{sso_url}/#/column/{node}")
            page.wait_for_selector("[data-testid=tags]")
            assert page.locator("[data-testid=tags] li[data-tag=pii]").count() == 0, node
            assert "pii" not in web_stack.tag_keys(node)
        page.goto(f"{sso_url}/#/column/{UPSTREAM[-1]}")
        page.wait_for_selector("[data-testid=tags] li[data-tag=pii]")

        # export the column's impact list: the downloaded CSV is the page's list, nearest first
        page.goto(f"{sso_url}/#/column/{STORY_COLUMN}")
        page.click("[data-testid=impact-link]")
        page.wait_for_selector("[data-testid=impact-summary]")
        shown = [row.get_attribute("data-node") for row in page.query_selector_all("tr[data-node]")]
        assert shown == ["app.export", DOWNSTREAM[0], "app.archive", DOWNSTREAM[1]]
        shots("impact")
        with page.expect_download() as download:
            page.click("[data-testid=impact-csv]")
        rows = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
        assert [row["id"] for row in rows] == shown
        assert all("pii" not in row["tags"] for row in rows), rows
    print(f"steward story: {time.monotonic() - began:.1f} s; screenshots in {shots.directory}")
