"""A tag a steward sets shows on the column page at once, as set here and pending (the page said
"No tags." until a propagation run, even after a reload), with a button that starts the run."""

from __future__ import annotations

from bench.ui_render import login

#: a leaf column with no tags of its own: the test's run changes nothing below it
NODE = "app.archive.uid"


def test_a_tag_set_here_shows_at_once_as_pending_and_the_page_starts_the_run(web_stack, page, shots):
    assert not web_stack.tag_keys(NODE)
    steward = web_stack.tokens["steward"]
    login(page, web_stack.base_url, steward)
    page.goto(f"{web_stack.base_url}/#/column/{NODE}")
    page.wait_for_selector("[data-testid=set-tag]")
    assert page.locator("[data-testid=tags] >> text=No tags.").count() == 1
    try:
        page.fill("[data-testid=set-tag] input[placeholder=key]", "pii")
        page.fill("[data-testid=set-tag] input[placeholder^=values]", "L2")
        page.click("[data-testid=set-tag] button[type=submit]")
        page.click("[data-testid=preview-confirm]")  # a set is previewed first (test_tag_preview_ui.py)
        pending = page.wait_for_selector("[data-testid=tags] li[data-pending=pii]")
        said = pending.text_content()
        assert (
            said.startswith("pii = L2 (set here by ") and "; pending until the next propagation run" in said
        )
        assert page.locator("[data-testid=tags] >> text=No tags.").count() == 0
        page.reload()
        page.wait_for_selector("[data-testid=tags] li[data-pending=pii]")
        shots("pending")

        with page.expect_response(
            lambda r: r.url.endswith("/api/v1/propagation/runs") and r.request.method == "POST"
        ) as sent:
            page.click("[data-testid=run-propagation]")
        assert sent.value.status == 202, sent.value.text()
        run_id = sent.value.json()["run_id"]
        assert run_id in page.wait_for_selector("[data-testid=run-started]").text_content()
        assert web_stack.wait_for_run(run_id)["status"] == "done"

        page.reload()
        page.wait_for_selector("[data-testid=tags] li[data-tag=pii]")
        assert page.locator("[data-testid=tags] li[data-pending]").count() == 0
        assert page.locator("[data-testid=run-propagation]").count() == 0
        shots("applied")
    finally:
        status, _ = web_stack.call("DELETE", f"/nodes/{NODE}/tags/pii", steward)
        if status == 200:
            status, run = web_stack.call("POST", "/propagation/runs", steward, {"full": False})
            assert status == 202, run
            assert web_stack.wait_for_run(run["run_id"])["status"] == "done"
    assert not web_stack.tag_keys(NODE)
