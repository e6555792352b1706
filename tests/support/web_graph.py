"""The column page's lineage graph as the browser tests read it: its nodes, a node's place on
screen, and waiting for a number of renders."""

from __future__ import annotations

from bench.ui_render import wait_for

NODES = "window.__watershed.graph.cy.nodes().map((n) => n.id())"
EDGES = "window.__watershed.graph.cy.edges().length"
NO_TAG = "#b8c2cc"


def on_screen(page, node_id: str) -> dict:
    return page.evaluate(
        """(id) => {
            const cy = window.__watershed.graph.cy;
            const box = cy.container().getBoundingClientRect();
            const at = cy.getElementById(id).renderedPosition();
            return { x: box.left + at.x, y: box.top + at.y };
        }""",
        node_id,
    )


def wait_renders(page, count: int) -> None:
    wait_for(page, f"window.__watershed.renderCount >= {count}")
