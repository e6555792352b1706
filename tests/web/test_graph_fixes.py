"""The lineage graph's small breakages, in Chromium: a double-click that finds nothing further says so,
and hiding an edge kind hides the nodes it leaves without any edge."""

from __future__ import annotations

from bench.ui_render import login
from tests.support.web_graph import NODES, on_screen, wait_renders


def test_expanding_a_node_with_nothing_further_says_so(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/ads.report.report_contact?direction=upstream&depth=3")
    wait_renders(page, 1)
    assert "ods.users.email" in page.evaluate(NODES)
    assert page.locator("[data-testid=graph-note]").count() == 0

    # the seed has no upstream: the double-click must answer, not redraw the same picture silently
    at = on_screen(page, "ods.users.email")
    page.mouse.dblclick(at["x"], at["y"])
    wait_renders(page, 2)
    note = page.locator("[data-testid=graph-note]")
    assert note.is_visible()
    assert note.text_content() == "Nothing further upstream of ods.users.email."
    shots("nothing-further")


def test_the_note_names_both_directions_and_clears_when_more_is_found(web_stack, page):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/dws.contacts.contact?depth=1")
    wait_renders(page, 1)

    # the page's own node: its one hop either way is already drawn
    at = on_screen(page, "dws.contacts.contact")
    page.mouse.dblclick(at["x"], at["y"])
    wait_renders(page, 2)
    note = "[data-testid=graph-note]"
    assert page.text_content(note) == "Nothing further upstream or downstream of dws.contacts.contact."

    # mail_u has ods.users.email behind it: the note goes
    at = on_screen(page, "dwd.users.mail_u")
    page.mouse.dblclick(at["x"], at["y"])
    wait_renders(page, 3)
    assert "ods.users.email" in page.evaluate(NODES)
    assert page.locator(note).count() == 0


def test_hiding_an_edge_kind_hides_the_nodes_it_leaves_alone(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/dws.contacts.contact?depth=1")
    wait_renders(page, 1)
    every = {"dwd.users.mail_u", "dws.contacts.contact", "ads.report.report_contact"}
    assert set(page.evaluate(NODES)) == every

    # contact -> report_contact is the only `direct` edge: report_contact would float alone
    page.uncheck("input[data-kind=direct]")
    wait_renders(page, 2)
    assert set(page.evaluate(NODES)) == {"dwd.users.mail_u", "dws.contacts.contact"}
    shots("direct-hidden")
    page.check("input[data-kind=direct]")
    wait_renders(page, 3)
    assert set(page.evaluate(NODES)) == every

    # the page's own node stays even when every edge kind is hidden
    page.uncheck("input[data-kind=direct]")
    wait_renders(page, 4)
    page.uncheck("input[data-kind=expression]")
    wait_renders(page, 5)
    assert page.evaluate(NODES) == ["dws.contacts.contact"]

    # collapsed by table, the hidden columns take their tables with them
    page.check("input[name=collapse]")
    wait_renders(page, 6)
    assert page.evaluate(NODES) == ["table:dws.contacts"]
    page.check("input[data-kind=expression]")
    wait_renders(page, 7)
    assert set(page.evaluate(NODES)) == {"table:dwd.users", "table:dws.contacts"}


# up.a feeds mid.b and both feed the root's table; the same past it with down.d and down.e
SKIP_VIEW = {
    "root": "root.r.c",
    "nodes": [
        {"id": node, "tags": {}}
        for node in ["up.a.c", "up.a.d", "mid.b.c", "root.r.c", "down.d.c", "down.e.c", "down.e.f"]
    ],
    "edges": [
        {"source": source, "target": target, "kind": "direct"}
        for source, target in [
            ("up.a.c", "mid.b.c"),
            ("mid.b.c", "root.r.c"),
            ("up.a.d", "root.r.c"),
            ("root.r.c", "down.d.c"),
            ("down.d.c", "down.e.c"),
            ("root.r.c", "down.e.f"),
        ]
    ],
}


def test_collapsed_tables_flow_left_to_right_by_distance(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/dws.contacts.contact?depth=1")
    wait_renders(page, 1)
    # the page's own graph object draws a view with a table both one and two hops from the root
    drawn = page.evaluate(
        """async (view) => {
            const g = window.__watershed.graph;
            g.setData(view);
            g.collapsed = true;
            await g.render();
            const x = (id) => g.cy.getElementById(id).position().x;
            return {
                x: Object.fromEntries(g.cy.nodes().map((n) => [n.id(), x(n.id())])),
                edges: g.cy.edges().map((e) => [e.source().id(), e.target().id()]),
            };
        }""",
        SKIP_VIEW,
    )
    shots("collapsed-flow")
    x = drawn["x"]
    order = ["up.a", "mid.b", "root.r", "down.d", "down.e"]
    assert [x[f"table:{table}"] for table in order] == sorted(x[f"table:{table}"] for table in order)
    assert len(set(x.values())) == len(order), x
    for source, target in drawn["edges"]:
        assert x[source] < x[target], (source, target, x)
