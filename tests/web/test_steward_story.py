"""The steward's story end to end in Chromium: find a column, read its lineage and why its pii tag is
there, block the tag, propagate, and see it gone downstream."""

from __future__ import annotations

from bench.ui_render import login, wait_for
from tests.web.conftest import DOWNSTREAM, STORY_COLUMN, UPSTREAM

GRAPH_NODES = "window.__watershed.graph.cy.nodes().map((n) => n.id())"


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


def test_steward_blocks_pii_and_propagation_removes_it_downstream(web_stack, page, shots):
    assert "pii" in web_stack.tag_keys(STORY_COLUMN), "the story needs the column tagged pii first"

    me = login(page, web_stack.base_url, web_stack.tokens["steward"])
    assert me["role"] == "steward"
    page.wait_for_selector("[data-testid=dashboard]")  # the home page is the coverage dashboard
    shots("logged-in")

    # search a column
    page.click("header.nav a:text-is('Search')")
    page.fill("input[name=q]", "report_contact")
    page.click("form button[type=submit]")
    page.wait_for_selector("[data-testid=search-results]")
    shots("search")
    page.click(f"[data-testid=search-results] a:text-is('{STORY_COLUMN}')")

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
    sql = details[0]["task"]["sql"]
    shown = "[data-testid=edge-sql]" if sql else "[data-testid=edge-sql-missing]"
    assert sql is None or "INSERT OVERWRITE TABLE ads.report" in sql
    assert page.text_content(shown) == (sql or "The task's SQL is not stored.")
    shots("edge")

    # why the column is pii: the path back to the seeded ods.users.email
    page.click("[data-testid=why-pii]")
    tree = page.wait_for_selector("[data-testid=why-tree]")
    for node in [STORY_COLUMN, *UPSTREAM]:
        assert tree.query_selector(f"li[data-node='{node}']"), node
    shots("why-path")

    # block the tag on the column
    page.click("[data-testid=block-here]")
    page.wait_for_selector("[data-testid=message]")
    shots("blocked")

    # start a propagation run and watch it finish
    page.click("nav a:text-is('Runs'), header a:text-is('Runs')")
    page.wait_for_selector(".run")  # the list has loaded, so the button is not a stale one
    with page.expect_response(
        lambda r: r.url.endswith("/api/v1/propagation/runs") and r.request.method == "POST"
    ) as sent:
        page.click("[data-testid=start-run]")
    assert sent.value.status == 202, sent.value.text()
    run_id = sent.value.json()["run_id"]
    page.wait_for_selector(f".run[data-run='{run_id}']")
    shots("run-started")
    page.wait_for_selector(f".run[data-run='{run_id}'][data-status=done]", timeout=90_000)
    shots("run-done")

    # the tag is gone from the column and downstream, and still on the upstream seed
    for node in [STORY_COLUMN, *DOWNSTREAM]:
        page.goto(f"{web_stack.base_url}/#/column/{node}")
        page.wait_for_selector("[data-testid=tags]")
        assert page.locator("[data-testid=tags] li[data-tag=pii]").count() == 0, node
        assert "pii" not in web_stack.tag_keys(node)
    shots("gone-downstream")
    page.goto(f"{web_stack.base_url}/#/column/{UPSTREAM[-1]}")
    page.wait_for_selector("[data-testid=tags] li[data-tag=pii]")
