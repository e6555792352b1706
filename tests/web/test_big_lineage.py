"""A column with a 2,000-column downstream cone: the page draws it whole (and says how long it took),
caps a smaller request with "show more", and collapses it by table."""

from __future__ import annotations

from bench.ui_render import login, measure_lineage_render, wait_for
from tests.web.conftest import BIG_COLUMN

CONE = 2000
TABLES = 1 + 50 + 50  # big.src and the two hops' tables


def test_two_thousand_node_cone_renders_and_stays_usable(web_stack, page, shots):
    login(page, web_stack.base_url, web_stack.tokens["viewer"])

    timing = measure_lineage_render(page, web_stack.base_url, BIG_COLUMN, limit=5000)
    print(f"2,000-node cone: drawn in {timing.render_ms:.0f} ms (lineage request {timing.fetch_ms:.0f} ms)")
    assert (timing.nodes, timing.truncated) == (CONE + 1, False), timing
    shots("whole-cone")

    # still interactive: zoom in, then a node click selects it
    page.click("button[title='zoom in']")
    picked = page.evaluate(
        """() => {
            const cy = window.__watershed.graph.cy;
            const node = cy.getElementById('big.hop1_0.c0');
            cy.zoom(1.2);
            cy.center(node);
            const box = cy.container().getBoundingClientRect();
            const at = node.renderedPosition();
            return { x: box.left + at.x, y: box.top + at.y };
        }"""
    )
    page.wait_for_timeout(300)
    page.mouse.click(picked["x"], picked["y"])
    page.wait_for_selector("[data-testid=selected-node] h3:text-is('big.hop1_0.c0')")
    shots("zoomed-selected")

    # collapsed by table: one node per table
    page.check("input[name=collapse]")
    wait_for(page, "window.__watershed.renderCount >= 2")
    assert page.evaluate("window.__watershed.lastNodes") == TABLES
    shots("collapsed")

    # a capped request says so and offers more
    timing = measure_lineage_render(page, web_stack.base_url, BIG_COLUMN, limit=500)
    assert timing.truncated and timing.nodes <= 500, timing
    page.click("[data-testid=show-more]")
    wait_for(page, "window.__watershed.renderCount >= 2 && window.__watershed.lastNodes > 500")
    shots("show-more")
