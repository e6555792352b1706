"""The table page's protection in Chromium, on the service of tests/api/http/test_protection_api.py
(real FalkorDB, Redis and KMS; tables whose locations hold real ORC files): what is pending, the
DDL the plan would run, an admin's "Apply protection" followed until done, then the encrypted
columns with key, version and mask; a viewer sees the state and no button."""

from __future__ import annotations

import pytest

from bench.ui_render import login
from tests.support.protection_service import held
from tests.web.conftest import strict_page


@pytest.fixture
def ui(browser, protect_api):
    """A strict page (tests/web/conftest.py) on the protection service."""
    with strict_page(browser, protect_api.url) as page:
        yield page


def row(page, column: str) -> list[str]:
    return [cell.text_content().strip() for cell in page.query_selector_all(f"tr[data-column={column}] td")]


def test_viewer_sees_pending_and_no_button(ui, protect_api):
    login(ui, protect_api.url, protect_api.tokens["viewer"])
    ui.goto(f"{protect_api.url}/#/table/sec.people_copy")
    ui.wait_for_selector("tr[data-column=ssn_c][data-state=pending]")
    assert "SET TBLPROPERTIES" in ui.text_content("[data-testid=protect-ddl]")
    assert "pii / nullify" in row(ui, "ssn_c")[6] and "sec.people.ssn" in row(ui, "ssn_c")[7]
    assert ui.query_selector("[data-testid=apply-protection]") is None


def test_admin_applies_and_sees_the_columns_encrypted(ui, protect_api, shots):
    login(ui, protect_api.url, protect_api.tokens["admin"])
    ui.goto(f"{protect_api.url}/#/table/sec.people")
    ui.wait_for_selector("tr[data-column=email][data-state=pending]")
    assert ui.get_attribute("tr[data-column=ssn]", "data-state") == "pending"
    assert ui.query_selector("tr[data-column=name]") is None  # nothing asks to protect it
    shots("pending")
    ui.click("[data-testid=apply-protection]")
    ui.wait_for_selector("[data-testid=protect-run][data-status=done]")
    assert "files 2/2" in ui.text_content("[data-testid=protect-run]")
    assert "on Spark" in ui.text_content("[data-testid=ddl-not-run]")  # no Spark in the service
    # the page reloads when the run ends: both columns encrypted, with key, version and mask
    ui.wait_for_selector("tr[data-column=ssn][data-state=encrypted]")
    cells = row(ui, "ssn")
    assert cells[1:5] == ["encrypted", "pii", "0", "nullify"] and cells[5].startswith("protect-")
    assert row(ui, "email")[1] == "encrypted"
    shots("encrypted")
    for path in protect_api.files["sec.people"]:
        assert held(path) == {"ssn": ("pii", "nullify", 0), "email": ("pii", "nullify", 0)}
