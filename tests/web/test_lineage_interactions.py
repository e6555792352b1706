"""The lineage graph's controls in Chromium: expand a node one hop, filter by edge kind, colour by tag,
zoom and pan, and the table-level graph."""

from __future__ import annotations

from bench.ui_render import login
from tests.support.web_graph import EDGES, NO_TAG, NODES, on_screen, wait_renders


def test_expand_filter_colour_zoom_pan(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/dws.contacts.contact?depth=1")
    wait_renders(page, 1)
    assert set(page.evaluate(NODES)) == {
        "dwd.users.mail_u",
        "dws.contacts.contact",
        "ads.report.report_contact",
    }
    shots("one-hop")

    # double-click a node: one more hop around it
    at = on_screen(page, "dwd.users.mail_u")
    page.mouse.dblclick(at["x"], at["y"])
    wait_renders(page, 2)
    assert "ods.users.email" in page.evaluate(NODES)
    assert page.evaluate(EDGES) == 3
    shots("expanded")

    # hide the `direct` edges (contact -> report_contact), keep the `expression` ones
    page.uncheck("input[data-kind=direct]")
    wait_renders(page, 3)
    assert page.evaluate(EDGES) == 2
    page.check("input[data-kind=direct]")
    wait_renders(page, 4)
    assert page.evaluate(EDGES) == 3

    # colour by pii: the seed and the columns it reached get the legend's colour
    page.select_option("select[name=colour]", "pii")
    wait_renders(page, 5)
    colour = page.evaluate("window.__watershed.graph.cy.getElementById('ods.users.email').data('colour')")
    assert colour != NO_TAG
    assert page.locator("[data-testid=graph-info] .chip", has_text="L3").count() == 1
    shots("coloured")

    # zoom with the buttons, pan by dragging the background
    zoom = page.evaluate("window.__watershed.graph.cy.zoom()")
    page.click("button[title='zoom in']")
    assert page.evaluate("window.__watershed.graph.cy.zoom()") > zoom
    pan = page.evaluate("window.__watershed.graph.cy.pan()")
    box = page.locator("[data-testid=graph]").bounding_box()
    page.mouse.move(box["x"] + 20, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + 120, box["y"] + 80, steps=5)
    page.mouse.up()
    moved = page.evaluate("window.__watershed.graph.cy.pan()")
    assert (round(moved["x"] - pan["x"]), round(moved["y"] - pan["y"])) == (100, 60)


def test_table_page_and_table_lineage(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/table/dws.contacts")
    page.wait_for_selector("td a:text-is('contact')")
    shots("table")
    page.click("a:text('table lineage')")
    wait_renders(page, 1)
    assert {"dwd.users", "dws.contacts", "ads.report"} <= set(page.evaluate(NODES))
    shots("table-lineage")


def test_table_ddl_copies(web_stack, page, shots):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/table/ods.users")
    ddl = page.wait_for_selector("[data-testid=ddl]").text_content()
    status, expected = web_stack.call("GET", "/tables/ods.users/ddl", web_stack.tokens["viewer"])
    assert status == 200 and ddl == expected["ddl"]
    assert "CREATE TABLE" in ddl and "email" in ddl
    assert "email" in page.text_content("[data-testid=protection]")
    page.click("[data-testid=copy-ddl]")
    page.wait_for_selector("[data-testid=copy-ddl]:text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == ddl
    shots("ddl")


def test_ttl_advice_page(web_stack, page, shots):
    from watershed.ttl_advisor.model import ColumnUse, Recommendation
    from watershed.ttl_advisor.store import store_recommendations

    advice = Recommendation(
        column="dwd.users.mail_u",
        table="dwd.users",
        status="ttl",
        ttl_days=30,
        max_window_days=7,
        evidence=[ColumnUse(task_id="t_contacts", roles=["value:expression"], window_days=7)],
    )
    store_recommendations(web_stack.graph, [advice], run_id="web-test")
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.click("header a:text-is('TTL advice')")
    row = page.wait_for_selector("[data-testid=ttl-advice] tr[data-column='dwd.users.mail_u']")
    cells = [cell.text_content() for cell in row.query_selector_all("td")]
    assert cells[:3] == ["dwd.users.mail_u", "ttl", "30"]
    assert "task t_contacts" in cells[5] and "reads 7 days" in cells[5]
    shots("ttl-advice")
