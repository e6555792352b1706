"""The web UI's lineage drawing time in a real headless Chromium, for bench/api_bench.py and tests/web.

    from bench.ui_render import chromium, login, measure_lineage_render, fan_out_tasks
    from bench.ui_render import page_marks_script, measure_page_load

`fan_out_tasks()` is SQL whose lineage gives one column a downstream cone of a chosen
size; `measure_lineage_render()` opens that column's page in the UI and returns what the
page measured itself (window.__watershed, set after cytoscape drew the first frame of
the laid-out graph), so the time is the browser's, not Playwright's round trips.
`page_marks_script()` and `measure_page_load()` time any page the same way without the page's help:
navigation start to a chosen element drawn (bench/ui_pages_bench.py).

Chromium is Debian's (/usr/bin/chromium, installed by scripts/bootstrap.sh); Playwright's
own browser downloads are never used.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

CHROMIUM = Path(os.environ.get("WATERSHED_CHROMIUM", "/usr/bin/chromium"))


class ChromiumMissingError(RuntimeError):
    pass


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (a playwright Browser) for the duration of the block."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise ChromiumMissingError(
            f"{CHROMIUM} not found: run scripts/bootstrap.sh as root (it installs Debian's chromium) "
            "or 'apt-get install -y chromium'"
        )
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=args)
        try:
            yield browser
        finally:
            browser.close()


def wait_for(page, expression: str, timeout_ms: float = 20_000) -> None:
    """Polls a JavaScript expression until it is truthy.

    Playwright's wait_for_function evaluates its predicate with eval(), which a page under a
    CSP without 'unsafe-eval' (as the UI is meant to run) refuses; evaluate() is not affected.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{expression!r} still false after {timeout_ms:.0f} ms")
        page.wait_for_timeout(50)


def login(page, base_url: str, token: str) -> dict:
    """Logs in through the UI's login form; returns the Me the page shows (name, role)."""
    page.goto(f"{base_url}/")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_selector("[data-testid=role]")
    return {"name": page.text_content("[data-testid=me]"), "role": page.text_content("[data-testid=role]")}


@dataclass
class RenderTiming:
    node: str
    #: data received -> layout -> first frame drawn, as the page measured it
    render_ms: float
    #: the lineage request as the page saw it
    fetch_ms: float
    nodes: int
    edges: int
    truncated: bool


def column_url(base_url: str, node_id: str, **params: object) -> str:
    query = "&".join(f"{key}={quote(str(value))}" for key, value in params.items())
    return f"{base_url}/#/column/{quote(node_id, safe='')}" + (f"?{query}" if query else "")


def measure_lineage_render(
    page,
    base_url: str,
    node_id: str,
    *,
    direction: str = "downstream",
    depth: int = 10,
    limit: int = 5000,
    timeout_ms: float = 60_000,
) -> RenderTiming:
    """Opens the column page of `node_id` (the page must be logged in) and waits for its graph.

    The page is loaded afresh so the timing has no earlier drawing's warm state but the
    browser's module cache.
    """
    page.goto(column_url(base_url, node_id, direction=direction, depth=depth, limit=limit))
    page.reload()
    wait_for(page, "window.__watershed && window.__watershed.renderCount >= 1", timeout_ms)
    state = page.evaluate(
        """() => {
            const w = window.__watershed;
            return { lastRenderMs: w.lastRenderMs, lastFetchMs: w.lastFetchMs, lastNodes: w.lastNodes,
                     lastEdges: w.lastEdges, truncated: !!document.querySelector('[data-testid=show-more]') };
        }"""
    )
    return RenderTiming(
        node=node_id,
        render_ms=state["lastRenderMs"],
        fetch_ms=state["lastFetchMs"],
        nodes=state["lastNodes"],
        edges=state["lastEdges"],
        truncated=state["truncated"],
    )


def fan_out_tasks(
    root_table: str = "big.src", column: str = "c", tables: int = 50, width: int = 20
) -> dict[str, str]:
    """SQL tasks giving `root_table.column` a downstream cone of 2 * tables * width columns in 2 hops.

    Each of `tables` first-hop tables copies the column `width` times; a second-hop table
    copies each of those. The defaults give 2,000 columns.
    """
    db = root_table.split(".")[0]
    tasks = {}
    for t in range(tables):
        hop1 = ", ".join(f"{column} AS c{i}" for i in range(width))
        tasks[f"fan_{t}_a"] = f"INSERT OVERWRITE TABLE {db}.hop1_{t} SELECT {hop1} FROM {root_table}"
        hop2 = ", ".join(f"upper(c{i}) AS d{i}" for i in range(width))
        tasks[f"fan_{t}_b"] = f"INSERT OVERWRITE TABLE {db}.hop2_{t} SELECT {hop2} FROM {db}.hop1_{t}"
    return tasks


# Records, for each wanted selector, when it first shows: window.__pageMarks[selector] = ms since
# the navigation's start, taken in the task after the animation frame that first holds the element
# (that frame is laid out and painted by then). A MutationObserver, so no page has to mark itself.
_MARKS = """
((wanted) => {
  window.__pageMarks = {};
  const check = () => {
    for (const selector of wanted) {
      if (!(selector in window.__pageMarks) && document.querySelector(selector)) {
        window.__pageMarks[selector] = -1;
        requestAnimationFrame(() => setTimeout(() => { window.__pageMarks[selector] = performance.now(); }, 0));
      }
    }
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true, characterData: true });
})(%s);
"""


def page_marks_script(selectors: Iterable[str]) -> str:
    """An init script (BrowserContext.add_init_script) timing when each of `selectors` is first drawn."""
    return _MARKS % json.dumps(sorted(selectors))


def measure_page_load(page, url: str, selector: str, *also: str, timeout_ms: float = 60_000) -> dict:
    """Loads `url` as a new navigation and waits until `selector` is drawn; the context must carry
    page_marks_script() naming `selector` and `also`.

    Returns `answer` (ms from the navigation's start to `selector` drawn), `marks` (the same for
    `also`, None when not drawn by then), `text` (the element's text, cut) and `requests` (the
    /api/v1/ requests the page had finished by then: path, start_ms, ms).
    """
    page.goto("about:blank")
    page.goto(url)
    drawn = f"(window.__pageMarks[{json.dumps(selector)}] || -1) > 0"
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(drawn):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url}: {selector} not drawn after {timeout_ms:.0f} ms")
        page.wait_for_timeout(20)
    return page.evaluate(
        """([selector, also]) => ({
            answer: window.__pageMarks[selector],
            marks: Object.fromEntries(also.map((s) => [s, window.__pageMarks[s] > 0 ? window.__pageMarks[s] : null])),
            text: document.querySelector(selector).textContent.trim().replace(/\\s+/g, ' ').slice(0, 160),
            requests: performance.getEntriesByType('resource')
              .filter((e) => e.name.includes('/api/v1/'))
              .map((e) => ({ path: e.name.slice(e.name.indexOf('/api/v1/') + 7),
                             start_ms: Math.round(e.startTime), ms: Math.round(e.duration) })),
        })""",
        [selector, list(also)],
    )
