"""GET /ttl/advice as a steward reads it: an empty list says which command stores advice, the
answer carries the total (not the page size), the biggest savings come first even where no size
was sampled (days of retention cut), and a status filter keeps one kind of advice."""

from __future__ import annotations

import pytest

from watershed.ttl_advisor.model import ColumnUse, Recommendation, Savings
from watershed.ttl_advisor.store import store_recommendations


@pytest.fixture
def viewer(api):
    with api.client("viewer") as client:
        yield client


def _rec(column: str, status: str, table_ttl: int | None, ttl: int | None = None, saved: int | None = None):
    uses = [ColumnUse(task_id="t", window_days=ttl)] if status == "ttl" else []
    if status == "keep":
        uses = [ColumnUse(task_id="t", window_days=None)]
    size = (
        None
        if saved is None
        else Savings(
            column_share=1, bytes_per_partition=1, partitions_beyond_ttl=1, bytes=saved, sampled_files=1
        )
    )
    return Recommendation(
        column=column,
        table=column.rsplit(".", 1)[0],
        status=status,
        ttl_days=ttl,
        table_ttl_days=table_ttl,
        evidence=uses,
        savings=size,
    )


def _all(viewer, **params) -> list[dict]:
    seen, cursor = [], None
    for _ in range(50):
        page = viewer.get(
            "/ttl/advice", params={"limit": 2, **params} | ({"cursor": cursor} if cursor else {})
        )
        assert page.status_code == 200, page.text
        seen += page.json()["items"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return seen
    raise AssertionError("the pages never ended")


def test_advice_says_what_to_run_counts_all_and_puts_the_biggest_cut_first(api, viewer):
    empty = viewer.get("/ttl/advice").json()
    assert empty["items"] == [] and empty["total"] == 0
    assert "watershed ttl run" in empty["hint"]

    columns = [row[0] for row in api.graph.read("MATCH (c:Column) RETURN c.id ORDER BY c.id LIMIT 6")]
    recs = [
        _rec(columns[0], "ttl", table_ttl=30, ttl=20),  # cuts 10 days
        _rec(columns[1], "ttl", table_ttl=400, ttl=10),  # cuts 390 days
        _rec(columns[2], "unused", table_ttl=90),  # cuts all 90 days
        _rec(columns[3], "keep", table_ttl=90),  # cuts nothing
        _rec(columns[4], "ttl", table_ttl=None, ttl=7),  # the table keeps it for ever: cut unknown
        _rec(columns[5], "unused", table_ttl=None, saved=5),  # a sampled size: bytes come first
    ]
    store_recommendations(api.graph, recs, "ttl-order")

    first = viewer.get("/ttl/advice", params={"limit": 2}).json()
    assert first["total"] == 6 and len(first["items"]) == 2 and first["hint"] is None
    seen = _all(viewer)
    assert [a["column"] for a in seen] == [columns[i] for i in (5, 1, 2, 0, 3, 4)]
    assert [a["days_cut"] for a in seen] == [None, 390, 90, 10, 0, None]

    unused = viewer.get("/ttl/advice", params={"status": "unused"}).json()
    assert unused["total"] == 2 and {a["column"] for a in unused["items"]} == {columns[2], columns[5]}
    assert [a["column"] for a in _all(viewer, status="ttl")] == [columns[i] for i in (1, 0, 4)]
    assert viewer.get("/ttl/advice", params={"status": "deleted"}).status_code == 422
    none_kept = viewer.get("/ttl/advice", params={"min_savings": 10**12}).json()
    assert none_kept["total"] == 0 and "matches these filters" in none_kept["hint"]
