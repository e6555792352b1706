"""The TTL advice page as a steward reads it: with nothing stored it says which command stores
advice (it said only "No advice."), the count is the API's total and not the page of 50, a status
filter keeps one kind, and a column page says its advice in words (it read "TTL ttl (4 days)")."""

from __future__ import annotations

from bench.ui_render import login
from watershed.ttl_advisor.model import ColumnUse, Recommendation
from watershed.ttl_advisor.store import store_recommendations

CLEAR = (
    "MATCH (c:Column) WHERE c.ttl_status IS NOT NULL REMOVE c.ttl_status, c.ttl_days_cut, c.ttl_savings_bytes"
)


def _advice(column: str, index: int) -> Recommendation:
    table = column.rsplit(".", 1)[0]
    if index % 3 == 0:
        return Recommendation(column=column, table=table, status="unused", table_ttl_days=90)
    return Recommendation(
        column=column,
        table=table,
        status="ttl",
        ttl_days=4,
        max_window_days=4,
        table_ttl_days=90,
        evidence=[ColumnUse(task_id="t_big", window_days=4)],
    )


def test_ttl_page_hints_counts_the_total_filters_by_status_and_words_a_column(web_stack, page, shots):
    graph = web_stack.graph
    graph.write_all([(CLEAR, {})])
    try:
        login(page, web_stack.base_url, web_stack.tokens["viewer"])
        page.goto(f"{web_stack.base_url}/#/ttl")
        empty = page.wait_for_selector("[data-testid=ttl-empty]").text_content()
        assert "No advice." in empty and "watershed ttl run" in empty
        shots("no-advice")

        columns = [
            r[0]
            for r in graph.read(
                "MATCH (c:Column) WHERE c.id STARTS WITH 'big.' RETURN c.id ORDER BY c.id LIMIT 61"
            )
        ]
        assert len(columns) == 61
        store_recommendations(graph, [_advice(c, i) for i, c in enumerate(columns)], run_id="web-ttl")
        page.reload()
        page.wait_for_selector("[data-testid=ttl-advice]")
        assert page.text_content("[data-testid=ttl-count]") == "61 columns with advice"
        assert page.locator("[data-testid=ttl-advice] tbody tr").count() == 50
        # unused columns cut the table's whole 90 days: they come first
        statuses = [
            cell.text_content()
            for cell in page.query_selector_all("[data-testid=ttl-advice] tbody td:nth-child(2)")
        ]
        assert statuses[:21] == ["unused"] * 21 and set(statuses[21:]) == {"ttl"}
        shots("advice")

        page.select_option("select[name=status]", "unused")
        page.click("button:text-is('Filter')")
        page.wait_for_selector("[data-testid=ttl-count]:text-is('21 columns with advice')")
        assert page.locator("[data-testid=ttl-advice] tbody tr").count() == 21

        page.goto(f"{web_stack.base_url}/#/column/{columns[1]}")
        assert page.wait_for_selector("[data-testid=column-ttl]").text_content() == "TTL advice: keep 4 days"
    finally:
        graph.write_all([(CLEAR, {})])
