"""The column page's lineage graph read as a person reads it, in Chromium at 1400 and 1920 px: at
its first (fit) zoom every label drawn is at least 10 screen pixels and every node with its label
lies inside the drawing; hovering a node or an edge shows what it is."""

from __future__ import annotations

import pytest

from bench.ui_render import login
from tests.support.web_graph import NODES, on_screen, wait_renders
from tests.web.conftest import STORY_COLUMN, STORY_TASKS, UPSTREAM, strict_page

#: each node's label as drawn: its font size on screen, whether it is shown, and its box (with the
#: label) in the container's pixels
DRAWN = """() => {
    const cy = window.__watershed.graph.cy;
    const box = cy.container().getBoundingClientRect();
    return {
        width: box.width,
        height: box.height,
        nodes: cy.nodes().map((n) => {
            const font = parseFloat(n.style('font-size')) * cy.zoom();
            const hidden = font < parseFloat(n.style('min-zoomed-font-size'));
            const b = n.renderedBoundingBox({ includeLabels: true });
            return { id: n.id(), label: n.style('label'), font, hidden, x1: b.x1, x2: b.x2, y1: b.y1, y2: b.y2 };
        }),
    };
}"""


@pytest.mark.parametrize("width,height", [(1400, 900), (1920, 1080)])
def test_labels_are_readable_and_inside_at_fit_zoom(web_stack, browser, width, height):
    with strict_page(browser, web_stack.base_url) as page:
        page.set_viewport_size({"width": width, "height": height})
        login(page, web_stack.base_url, web_stack.tokens["viewer"])
        page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
        wait_renders(page, 1)
        drawn = page.evaluate(DRAWN)
        print(
            f"{width} px: graph {drawn['width']:.0f}x{drawn['height']:.0f}, label sizes "
            + ", ".join(f"{n['id']} {n['font']:.1f}px" for n in drawn["nodes"])
        )
        assert {n["id"] for n in drawn["nodes"]} >= {STORY_COLUMN, *UPSTREAM}
        for node in drawn["nodes"]:
            assert node["label"] and not node["hidden"], f"{node['id']}: no label at fit zoom"
            assert node["font"] >= 10, f"{node['id']}: label {node['font']:.1f} px"
            assert node["x1"] >= 0 and node["x2"] <= drawn["width"], f"{node['id']} clipped: {node}"
            assert node["y1"] >= 0 and node["y2"] <= drawn["height"], f"{node['id']} clipped: {node}"


def _wide_view(columns: int) -> dict:
    """`columns` columns downstream of the root in three layers, in tables of a few columns each."""
    root = "ads.report.report_contact"
    nodes = [{"id": root, "label": "Column", "table": "ads.report", "tags": {}}]
    edges, last = [], {}
    for i in range(columns):
        layer = i % 3
        table = f"dws.summary_table_{layer}_{i % 5}"
        node = f"{table}.metric_column_{i}"
        nodes.append({"id": node, "label": "Column", "table": table, "tags": {}})
        edges.append({"source": last.get(layer - 1, root), "target": node, "kind": "direct"})
        last[layer] = node
    return {"root": root, "nodes": nodes, "edges": edges}


def test_sixty_columns_are_readable_at_fit_zoom_at_1920(web_stack, browser):
    with strict_page(browser, web_stack.base_url) as page:
        page.set_viewport_size({"width": 1920, "height": 1080})
        login(page, web_stack.base_url, web_stack.tokens["viewer"])
        page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
        wait_renders(page, 1)
        # the page's own graph object draws the view (the fixture's graph has no such fan)
        page.evaluate(
            "async (view) => { const g = window.__watershed.graph; g.setData(view); await g.render(); }",
            _wide_view(60),
        )
        drawn = page.evaluate(DRAWN)
        assert len(drawn["nodes"]) == 61
        smallest = min(node["font"] for node in drawn["nodes"])
        print(f"60 columns at 1920 px: labels {smallest:.1f} px")
        for node in drawn["nodes"]:
            assert not node["hidden"] and node["font"] >= 10, f"{node['id']}: label {node['font']:.1f} px"
            assert node["x1"] >= 0 and node["x2"] <= drawn["width"], f"{node['id']} clipped: {node}"
            assert node["y1"] >= 0 and node["y2"] <= drawn["height"], f"{node['id']} clipped: {node}"


def test_columns_too_many_to_read_start_as_tables_that_open_on_double_click(web_stack, browser):
    with strict_page(browser, web_stack.base_url) as page:
        login(page, web_stack.base_url, web_stack.tokens["viewer"])
        page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
        wait_renders(page, 1)
        # 60 columns at 1400 px: as columns their labels would be under 10 px (hidden)
        page.evaluate(
            "async (view) => { const g = window.__watershed.graph; g.setData(view); await g.render(); }",
            _wide_view(60),
        )
        drawn = page.evaluate(DRAWN)
        ids = {node["id"] for node in drawn["nodes"]}
        assert ids == {"table:ads.report"} | {
            f"table:dws.summary_table_{layer}_{t}" for layer in range(3) for t in range(5)
        }
        for node in drawn["nodes"]:
            assert not node["hidden"] and node["font"] >= 10, f"{node['id']}: label {node['font']:.1f} px"
            assert node["x1"] >= 0 and node["x2"] <= drawn["width"], f"{node['id']} clipped: {node}"

        # a double-click opens a table to its columns, the others stay tables
        at = on_screen(page, "table:dws.summary_table_0_0")
        page.mouse.dblclick(at["x"], at["y"])
        wait_renders(page, 2)
        opened = set(page.evaluate(NODES))
        columns = {f"dws.summary_table_0_0.metric_column_{i}" for i in range(0, 60, 15)}
        assert columns <= opened and "table:dws.summary_table_0_0" not in opened
        assert "table:dws.summary_table_1_1" in opened
        # the toolbar says the drawing is collapsed (unchecking shows every column)
        assert page.is_checked("input[name=collapse]")
        # its columns' edges are drawn to the tables they come from and go to
        edges = page.evaluate(
            "window.__watershed.graph.cy.edges().map((e) => [e.source().id(), e.target().id()])"
        )
        assert ["table:ads.report", "dws.summary_table_0_0.metric_column_0"] in edges


def _edge_midpoint(page, source: str, target: str) -> dict:
    return page.evaluate(
        """([source, target]) => {
            const cy = window.__watershed.graph.cy;
            const edge = cy.edges().filter((e) => e.source().id() === source && e.target().id() === target)[0];
            const box = cy.container().getBoundingClientRect();
            const at = edge.renderedMidpoint();
            return { x: box.left + at.x, y: box.top + at.y };
        }""",
        [source, target],
    )


def test_hovering_a_node_or_an_edge_shows_its_details(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
    wait_renders(page, 1)
    tip = page.locator("[data-testid=graph-tip]")

    at = on_screen(page, UPSTREAM[0])
    page.mouse.move(at["x"], at["y"])
    tip.wait_for(state="visible")
    lines = tip.locator("div").all_inner_texts()
    assert lines[0] == UPSTREAM[0] and "column of dws.contacts" in lines
    assert "pii = L3" in lines and "pii_type = email" in lines
    shots("hover-node")

    # contact -> report_contact: a direct copy by t_report
    at = _edge_midpoint(page, UPSTREAM[0], STORY_COLUMN)
    page.mouse.move(at["x"], at["y"])
    page.wait_for_selector(f"[data-testid=graph-tip] .head:text-is('{UPSTREAM[0]} → {STORY_COLUMN}')")
    lines = tip.locator("div").all_inner_texts()
    assert "FLOWS_TO · direct" in lines and "task: t_report" in lines
    shots("hover-edge")

    page.mouse.move(5, 5)
    tip.wait_for(state="hidden")


def test_clicking_an_edge_marks_the_target_column_expression_in_the_task_sql(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])
    page.goto(f"{web_stack.base_url}/#/column/{STORY_COLUMN}")
    wait_renders(page, 1)

    # mail_u -> contact: t_contacts writes contact as concat(mail_u, '')
    at = _edge_midpoint(page, UPSTREAM[1], UPSTREAM[0])
    page.mouse.click(at["x"], at["y"])
    marked = page.wait_for_selector("[data-testid=edge-sql] [data-testid=edge-expression]")
    assert marked.text_content() == "concat(mail_u, '') AS contact"
    # the rest of the task's SQL is there as stored, around the mark
    assert page.text_content("[data-testid=edge-sql]") == STORY_TASKS["t_contacts"]
    shots("edge-expression")

    at = _edge_midpoint(page, UPSTREAM[0], STORY_COLUMN)
    page.mouse.click(at["x"], at["y"])
    page.wait_for_selector("[data-testid=edge-expression]:text-is('contact AS report_contact')")
