"""The search page as a steward uses it: hits ranked with their count (they came alphabetically,
uncounted), a database filter (the README promised one), a typo forgiven, a pii badge on a table
holding a pii column, and a bad tag filter shown as its error alone (not "Nothing found." too)."""

from __future__ import annotations

import itertools

from bench.ui_render import login

_visits = itertools.count()


def _search(page, base_url: str, q: str = "", kind: str = "", db: str = "", tag: str = "") -> None:
    # a hash of its own: the page is mounted afresh, so no earlier search's results linger
    page.goto(f"{base_url}/#/search?visit={next(_visits)}")
    page.wait_for_selector("form input[name=q]")
    page.fill("input[name=q]", q)
    page.select_option("select[name=kind]", kind)
    page.fill("input[name=db]", db)
    page.fill("input[name=tag]", tag)
    page.click("button:text-is('Search')")


def _rows(page) -> list[str]:
    page.wait_for_selector("[data-testid=search-results]")
    return [
        row.get_attribute("data-id")
        for row in page.query_selector_all("[data-testid=search-results] tbody tr")
    ]


def test_search_ranks_counts_filters_by_database_forgives_a_typo_and_badges_pii(web_stack, page, shots):
    base = web_stack.base_url
    login(page, base, web_stack.tokens["viewer"])

    _search(page, base, q="contact", kind="column")
    # the exact name before those that only hold it (alphabetically ads. came first), a tagged
    # one before an untagged one
    assert _rows(page) == ["dws.contacts.contact", "ads.report.report_contact", "dws.contacts.uid"]
    assert page.text_content("[data-testid=search-count]") == "3 results"
    shots("ranked")

    _search(page, base, q="contact", db="dws")
    page.wait_for_selector("[data-testid=search-count]:text-is('3 results')")
    assert sorted(_rows(page)) == ["dws.contacts", "dws.contacts.contact", "dws.contacts.uid"]

    _search(page, base, q="report_contcat", kind="column")
    page.wait_for_selector("[data-testid=search-count]")
    assert _rows(page) == ["ads.report.report_contact"]
    assert "names one edit away" in page.text_content("[data-testid=search-count]")

    _search(page, base, q="users", kind="table")
    page.wait_for_selector("[data-testid=search-results] tr[data-id='dwd.users']")
    assert {"ods.users", "dwd.users"} <= set(_rows(page))
    badge = page.wait_for_selector("tr[data-id='ods.users'] [data-testid=sensitive]")
    assert badge.text_content() == "pii"
    shots("pii-badge")

    _search(page, base, q="users", tag="pii>=L9")
    page.wait_for_selector(".error[role=alert]")
    assert "L9" in page.text_content(".error[role=alert]")
    assert page.locator("[data-testid=search-none]").count() == 0
    assert page.locator("text=Nothing found.").count() == 0
