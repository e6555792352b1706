"""The audit trail in the browser: an admin's Audit page (filters, pages) and a node's History on
its column page, for the stewards who may read it and not for viewers."""

from __future__ import annotations

from playwright.sync_api import expect

from bench.ui_render import login
from tests.web.conftest import DOWNSTREAM

#: a story column whose region tag no other test reads: set and taken back, its tags end as they began
NODE = DOWNSTREAM[1]


def _actions(page) -> list[str]:
    return [row.get_attribute("data-action") for row in page.query_selector_all("tr[data-entry]")]


def test_a_column_page_shows_its_history_and_the_admin_filters_the_trail(web_stack, page, shots):
    steward = web_stack.tokens["steward"]
    status, _ = web_stack.call("PUT", f"/nodes/{NODE}/tags/region", steward, {"values": ["cn"]})
    assert status == 200
    status, _ = web_stack.call("DELETE", f"/nodes/{NODE}/tags/region", steward)
    assert status == 200

    login(page, web_stack.base_url, steward)
    page.goto(f"{web_stack.base_url}/#/column/{NODE}")
    page.wait_for_selector("[data-testid=node-history] tr[data-entry]")
    rows = page.locator("[data-testid=node-history] tbody tr")
    newest, before = (rows.nth(i).locator("td").all_inner_texts() for i in (0, 1))
    assert newest[1:4] == ["sam", "tag.unset", "region"] and before[1:4] == ["sam", "tag.set", "region"]
    assert '"cn"' in newest[4] and '"cn"' in before[5]
    # a steward has no Audit page in the menu: the whole trail is an unrestricted admin's
    assert page.locator(".nav a[href='#/audit']").count() == 0

    page.context.clear_cookies()
    login(page, web_stack.base_url, web_stack.tokens["admin"])
    page.click(".nav a[href='#/audit']")
    page.wait_for_selector("[data-testid=audit-filters]")
    page.fill("[data-testid=audit-filters] input[name=actor]", "sam")
    page.fill("[data-testid=audit-filters] input[name=node]", NODE)
    page.click("[data-testid=audit-filters] button[type=submit]")
    expect(page.locator("tr[data-entry]")).to_have_count(2)
    assert _actions(page) == ["tag.unset", "tag.set"]
    assert page.locator(f"tr[data-entry] a[href='#/column/{NODE}']").count() == 2
    shots("audit")

    # a page at a time: More brings the older entry, once
    page.goto(f"{web_stack.base_url}/#/audit?actor=sam&node={NODE}&limit=1")
    expect(page.locator("tr[data-entry]")).to_have_count(1)
    assert _actions(page) == ["tag.unset"]
    page.click("[data-testid=audit-more]")
    expect(page.locator("tr[data-entry]")).to_have_count(2)
    assert _actions(page) == ["tag.unset", "tag.set"]
    assert page.locator("[data-testid=audit-more]").count() == 0

    # a time range that ends before the changes holds none of them
    page.goto(f"{web_stack.base_url}/#/audit?actor=sam&node={NODE}&until=2000-01-01T00:00")
    page.wait_for_selector("[data-testid=audit-none]")


def test_a_viewer_sees_no_history_and_no_trail(web_stack, page):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/{NODE}")
    page.wait_for_selector("[data-testid=graph]")
    page.wait_for_selector("text=Column")
    assert page.locator("[data-testid=node-history]").count() == 0
    assert page.locator(".nav a[href='#/audit']").count() == 0
    page.goto(f"{web_stack.base_url}/#/audit")
    page.wait_for_selector("text=The audit trail needs an admin of all databases.")
