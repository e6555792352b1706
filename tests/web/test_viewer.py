"""A viewer reads everything, is shown no button to change anything, and is refused (403) by the routes."""

from __future__ import annotations

from bench.ui_render import login, wait_for
from tests.web.conftest import UPSTREAM

SEED = UPSTREAM[-1]  # ods.users.email keeps its pii tag whatever the steward story blocks downstream


def test_viewer_sees_no_change_buttons_and_gets_403(web_stack, page, shots):
    me = login(page, web_stack.base_url, web_stack.tokens["viewer"])
    assert me["role"] == "viewer"

    page.goto(f"{web_stack.base_url}/#/column/{SEED}")
    page.wait_for_selector("[data-testid=tags] li[data-tag=pii]")
    wait_for(page, "window.__watershed.renderCount >= 1")
    tags = page.locator("[data-testid=tags]")
    assert tags.locator("button").count() == 0
    assert page.locator("[data-testid=set-tag]").count() == 0
    shots("column")

    page.click("[data-testid=why-pii]")
    page.wait_for_selector("[data-testid=why-tree]")
    assert page.locator("[data-testid=why-tree] button").count() == 0
    shots("why-path")

    page.goto(f"{web_stack.base_url}/#/runs")
    page.wait_for_selector("h2:text('Propagation runs')")
    page.wait_for_selector(".run")
    assert page.locator("[data-testid=start-run]").count() == 0
    assert page.locator(".run button").count() == 0
    shots("runs")

    # the routes themselves refuse, with the browser's own session cookie and CSRF header
    api = f"{web_stack.base_url}/api/v1"
    csrf = {"X-Watershed-CSRF": "1"}
    calls = [
        page.request.put(f"{api}/nodes/{SEED}/blocks/pii", headers=csrf),
        page.request.put(f"{api}/nodes/{SEED}/tags/pii", headers=csrf, data={"values": ["L1"]}),
        page.request.delete(f"{api}/nodes/{SEED}/tags/pii", headers=csrf),
        page.request.post(f"{api}/propagation/runs", headers=csrf, data={"full": False}),
    ]
    for response in calls:
        assert response.status == 403, (response.url, response.status, response.text())
        assert "steward" in response.json()["detail"]
    assert "pii" in web_stack.tag_keys(SEED)

    # logging out ends the session the cookie named
    page.click("header button:text('Log out')")
    page.wait_for_selector("input[name=token]")
    assert page.request.get(f"{api}/me").status == 401
