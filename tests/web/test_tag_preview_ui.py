"""A steward's set or block on the column page is previewed before it is made: the columns and
tables the next run would change (the API's POST /preview answer), then Confirm makes the change
and Cancel leaves everything as it was."""

from __future__ import annotations

from bench.ui_render import login
from tests.web.conftest import DOWNSTREAM, STORY_COLUMN


def _own(web_stack, steward) -> list[tuple[str, str]]:
    status, tags = web_stack.call("GET", f"/nodes/{STORY_COLUMN}/tags", steward)
    assert status == 200, tags
    return sorted((entry["type"], entry["key"]) for entry in tags["set_here"])


def test_a_block_is_previewed_and_cancel_changes_nothing(web_stack, page, shots):
    steward = web_stack.tokens["steward"]
    before = _own(web_stack, steward)
    login(page, web_stack.base_url, steward)
    page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
    page.click("[data-testid=block-pii]")
    summary = page.wait_for_selector("[data-testid=preview-summary]").text_content()
    status, expected = web_stack.call(
        "POST", "/preview", steward, {"node": STORY_COLUMN, "action": "block", "key": "pii"}
    )
    assert status == 200, expected
    assert summary.startswith(
        f"These {expected['columns']} columns change, in these {expected['tables']} tables"
    )
    rows = {
        (row.get_attribute("data-node"), row.get_attribute("data-key"))
        for row in page.query_selector_all("[data-testid=preview] tr[data-node]")
    }
    assert rows == {(i["node"], i["key"]) for g in expected["groups"] for i in g["items"]}
    assert {(node, "pii") for node in [STORY_COLUMN, *DOWNSTREAM]} <= rows
    tables = [
        t.get_attribute("data-table") for t in page.query_selector_all("[data-testid=preview] [data-table]")
    ]
    assert tables == [g["table"] for g in expected["groups"]]
    shots("preview-block")
    assert _own(web_stack, steward) == before  # previewing made nothing

    page.click("[data-testid=preview-cancel]")
    page.wait_for_selector("[data-testid=preview]", state="detached")
    assert _own(web_stack, steward) == before
    assert page.locator("[data-testid=tags] li[data-block]").count() == 0


def test_a_set_is_made_once_confirmed(web_stack, page):
    steward = web_stack.tokens["steward"]
    before = _own(web_stack, steward)
    login(page, web_stack.base_url, steward)
    page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
    page.fill("[data-testid=set-tag] input[placeholder=key]", "pii")
    page.fill("[data-testid=set-tag] input[placeholder^=values]", "L4")
    page.click("[data-testid=set-tag] button[type=submit]")
    page.wait_for_selector("[data-testid=preview-summary]")
    # pii=L4 where L3 arrives: the column and everything downstream goes to L4
    for node in [STORY_COLUMN, *DOWNSTREAM]:
        cells = page.locator(f'[data-testid=preview] tr[data-node="{node}"][data-key=pii] td')
        assert cells.all_text_contents()[-2:] == ["L3", "L4"], node
    assert _own(web_stack, steward) == before
    try:
        page.click("[data-testid=preview-confirm]")
        page.wait_for_selector("[data-testid=tags] li[data-pending=pii]")
        assert _own(web_stack, steward) == sorted([*before, ("TAGGED", "pii")])
        assert page.locator("[data-testid=preview]").count() == 0
    finally:
        status, _ = web_stack.call("DELETE", f"/nodes/{STORY_COLUMN}/tags/pii", steward)
    assert status == 200 and _own(web_stack, steward) == before
