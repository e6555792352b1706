"""The coverage dashboard is the home page: after logging in a steward sees the stored snapshot's
numbers (those GET /coverage answers), follows "not yet protected" to the columns and one of them
to its column page, sees the unprotected columns below a protected root and a trend once there are
two snapshots; a viewer sees no button to compute one. Search keeps its own route."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bench.ui_render import login
from tests.web.conftest import UPSTREAM
from watershed.graph.protection import ColumnKey, TableProtection
from watershed.orc_crypto.protect import records

ROOT = UPSTREAM[-1]  # ods.users.email, seeded pii


@pytest.fixture
def protected_root(web_stack):
    """ods.users.email recorded as encrypted as the default policy asks (pii L3: key pii, nullify),
    and no snapshot before the test; both removed after it (the graph is the session's)."""
    graph = web_stack.graph
    graph.execute("MATCH (s) WHERE s:CoverageSnapshot OR s:CoverageList DELETE s")
    records.save_table(
        graph,
        TableProtection(
            table="ods.users",
            columns={"email": ColumnKey(key="pii", mask="nullify")},
            at="2026-01-01T00:00:00+00:00",
            run="coverage-ui-test",
        ),
    )
    yield
    graph.execute("MATCH (p:TableProtection {table: 'ods.users'}) DETACH DELETE p")
    graph.execute("MATCH (s) WHERE s:CoverageSnapshot OR s:CoverageList DELETE s")


def _figure(page, name: str) -> int:
    return int(page.text_content(f"[data-testid=coverage-{name}] .value"))


def _listed(page) -> list[str]:
    page.wait_for_selector("[data-testid=coverage-columns]")
    return [
        row.get_attribute("data-column")
        for row in page.query_selector_all("[data-testid=coverage-columns] tbody tr")
    ]


def test_the_home_page_is_the_dashboard_and_each_number_leads_to_its_columns(
    web_stack, protected_root, page, shots
):
    base = web_stack.base_url
    login(page, base, web_stack.tokens["steward"])
    page.wait_for_selector("[data-testid=coverage-none]")  # the home page, before any snapshot
    shots("no-snapshot")

    page.click("[data-testid=coverage-refresh]")
    page.wait_for_selector("[data-testid=coverage-unprotected]")
    status, answer = web_stack.call("GET", "/coverage", web_stack.tokens["viewer"])
    assert status == 200, answer
    totals = answer["snapshot"]["totals"]
    for name in ("sensitive", "protected", "unprotected", "uncovered", "proposals", "downstream"):
        assert _figure(page, name) == totals[name], name
    assert totals["protected"] == 1 and totals["downstream"] > 0
    # every column below the protected root, as the API lists them, shown with its root
    status, below = web_stack.call(
        "GET", "/coverage/columns?list=downstream&limit=1000", web_stack.tokens["viewer"]
    )
    assert status == 200, below
    assert _listed(page) == [c["column"] for c in below["columns"]]
    assert {tuple(c["roots"]) for c in below["columns"]} == {(ROOT,)}
    shots("dashboard")

    # "not yet protected" -> the columns -> one column's page
    page.click("[data-testid=coverage-unprotected-link]")
    page.wait_for_selector("[data-testid=coverage-list-total]")
    status, unprotected = web_stack.call("GET", "/coverage/columns?limit=1000", web_stack.tokens["viewer"])
    assert _listed(page) == [c["column"] for c in unprotected["columns"]]
    assert page.text_content("[data-testid=coverage-list-total]").startswith(
        f"{totals['unprotected']} columns"
    )
    shots("not-yet-protected")
    first = unprotected["columns"][0]["column"]
    page.click(f"[data-testid=coverage-columns] tr[data-column='{first}'] a")
    page.wait_for_selector("[data-testid=tags]")
    assert page.url.endswith(f"#/column/{first}")

    # a database's row leads to that database's columns only
    page.goto(f"{base}/#/")
    row = page.locator("[data-testid=coverage-databases] tr[data-database=dwd] td.unprotected a")
    row.click()
    page.wait_for_selector("[data-testid=coverage-list-total]")
    assert _listed(page) and all(column.startswith("dwd.") for column in _listed(page))

    # a second snapshot (an earlier date) draws the trend, oldest first
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    status, _ = web_stack.call("POST", f"/coverage/refresh?date={yesterday}", web_stack.tokens["steward"])
    assert status == 200
    page.goto(f"{base}/#/")
    # a flat line has no height: Playwright counts it hidden
    page.wait_for_selector(
        "[data-testid=coverage-trend] svg polyline[data-series=unprotected]", state="attached"
    )
    assert page.locator("[data-testid=coverage-trend] svg polyline").count() == 3
    shots("trend")

    # search keeps its own route
    page.click("header.nav a:text-is('Search')")
    page.wait_for_selector("form input[name=q]")


def test_a_viewer_reads_the_dashboard_without_a_compute_button(web_stack, protected_root, page):
    status, _ = web_stack.call("POST", "/coverage/refresh", web_stack.tokens["steward"])
    assert status == 200
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.wait_for_selector("[data-testid=coverage-unprotected]")
    assert page.locator("[data-testid=coverage-refresh]").count() == 0
    page.wait_for_selector("[data-testid=coverage-nightly]")
