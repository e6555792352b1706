"""A column's description and owner on its page: a steward sets a description through the form, a
propagation run carries it to the direct copy downstream, whose page shows it as propagated with the
path back; the table's owner from the catalog shows on its columns; a viewer sees no form; clearing
takes it back."""

from __future__ import annotations

from bench.ui_render import login
from tests.web.conftest import STORY_COLUMN

COPY = "app.export.exported"


def _propagate(web_stack) -> None:
    status, run = web_stack.call("POST", "/propagation/runs", web_stack.tokens["admin"], {"full": False})
    assert status == 202, run
    assert web_stack.wait_for_run(run["run_id"])["status"] == "done"


def test_a_steward_describes_a_column_and_its_copy_shows_it_with_the_path_back(web_stack, page, shots):
    base = web_stack.base_url
    login(page, base, web_stack.tokens["steward"])
    try:
        page.goto(f"{base}/#/column/{STORY_COLUMN}")
        page.wait_for_selector("[data-testid=metadata]")
        assert page.text_content("[data-testid=description-value]") == "No description."
        page.click("[data-testid=description-edit]")
        page.fill("textarea[name=description]", "The contact shown in the report")
        page.click("[data-testid=description-save]")
        page.wait_for_selector("[data-testid=description-value]:text-is('The contact shown in the report')")
        assert page.text_content("[data-testid=description-source]").startswith("set by sam")
        shots("described")

        _propagate(web_stack)
        page.goto(f"{base}/#/column/{COPY}")
        page.wait_for_selector("[data-testid=description-value]:text-is('The contact shown in the report')")
        assert (
            page.text_content("[data-testid=description-source]") == "propagated 1 hop(s) along direct copies"
        )
        path = page.text_content("[data-testid=metadata-path]")
        assert " ".join(path.split()) == f"copied by t_export from {STORY_COLUMN} (steward)"
        shots("propagated")

        upstream = "ods.users.email"
        page.goto(f"{base}/#/column/{upstream}")
        page.wait_for_selector("[data-testid=owner-value]:text-is('crm')")
        assert page.text_content("[data-testid=owner-source]") == "its table’s owner"

        page.goto(f"{base}/#/column/{STORY_COLUMN}")
        page.click("[data-testid=description-clear]")
        page.wait_for_selector("[data-testid=description-value]:text-is('No description.')")
    finally:
        web_stack.call("DELETE", f"/nodes/{STORY_COLUMN}/description", web_stack.tokens["admin"])
        _propagate(web_stack)
    status, shown = web_stack.call("GET", f"/nodes/{COPY}/metadata", web_stack.tokens["admin"])
    assert status == 200 and shown["description"]["value"] is None


def test_a_viewer_sees_the_description_without_a_form(web_stack, page):
    base = web_stack.base_url
    login(page, base, web_stack.tokens["viewer"])
    page.goto(f"{base}/#/column/ods.users.email")
    page.wait_for_selector("[data-testid=metadata]")
    assert page.query_selector("[data-testid=description-edit]") is None
    assert page.query_selector("[data-testid=owner-edit]") is None
