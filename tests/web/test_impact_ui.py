"""The Impact page as a steward opens it from a table or column page: every downstream table and
column grouped by owner, with its layer, tags and TTL, and a CSV export of the same list."""

from __future__ import annotations

import time

from bench.ui_render import login
from tests.web.conftest import BIG_COLUMN, DOWNSTREAM, STORY_COLUMN


def test_the_impact_page_lists_downstream_nodes_by_owner_and_exports_csv(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/table/ads.report")
    page.click("[data-testid=impact-link]")
    page.wait_for_selector("[data-testid=impact-summary]")
    assert page.url.endswith("#/impact/ads.report")
    listed = [row.get_attribute("data-node") for row in page.query_selector_all("tr[data-node]")]
    assert set(DOWNSTREAM) <= set(listed) and {"app.export", "app.archive"} <= set(listed)
    # the story's tables downstream have no owner: one group, named as such
    assert [h.text_content() for h in page.query_selector_all(".impact-group h3")] == [
        f"(no owner) {len(listed)}"
    ]
    row = page.locator('tr[data-node="app.export.exported"]')
    assert "pii=" in row.text_content() and "value" in row.text_content()
    shots("impact")

    link = page.get_attribute("[data-testid=impact-csv]", "href")
    answer = page.request.get(f"{web_stack.base_url}{link}")
    assert answer.ok and answer.headers["content-type"].startswith("text/csv")
    rows = answer.text().splitlines()
    assert rows[0].startswith("owner,id,kind,via,hops,layer,tags,ttl_days")
    assert [r.split(",")[1] for r in rows[1:]] == listed

    page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
    page.click("[data-testid=impact-link]")
    page.wait_for_selector("[data-testid=impact-summary]")
    # nearest first, a table before its columns at the same distance
    nodes = [row.get_attribute("data-node") for row in page.query_selector_all("tr[data-node]")]
    assert nodes == ["app.export", DOWNSTREAM[0], "app.archive", DOWNSTREAM[1]]


def test_the_impact_of_a_wide_column_is_bounded_and_says_so(web_stack, page):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    began = time.monotonic()
    page.goto(f"{web_stack.base_url}/#/impact/{BIG_COLUMN}")
    summary = page.wait_for_selector("[data-testid=impact-summary]").text_content()
    print(
        f"impact of {BIG_COLUMN}: {time.monotonic() - began:.2f} s to the listed page ({summary.split()[0]} downstream)"
    )
    assert "the nearest 500 listed" in " ".join(summary.split())
    assert page.locator("tr[data-node]").count() == 500
