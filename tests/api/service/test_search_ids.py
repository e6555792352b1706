"""Search pages over ids FalkorDB's index orders unlike ORDER BY (non-ASCII names, case twins):
every matching node comes once, in id order, whatever the page size."""

from __future__ import annotations

import pytest

from watershed.api.service.search import search_nodes
from watershed.graph.falkordb_store import FalkorDBStore
from watershed.graph.server import free_port
from watershed.propagation.policy import default_policy

IDS = [
    "ods.a",
    "ods.b",
    "ods.tä",
    "ods.z",
    "ods.用户",
    "ods.订单",
    "ods.订单明细",
    "dw.x",
    "path:fs./data/Out",
    "path:fs./data/out",
]


@pytest.fixture(scope="module")
def graph(falkordb_server):
    store = FalkorDBStore(falkordb_server.host, falkordb_server.port, graph=f"search_ids_{free_port()}")
    store.ensure_schema()
    store.execute("UNWIND $ids AS id MERGE (:Table {id: id})", {"ids": IDS})
    yield store
    store.clear()
    store.close()


def every_page(graph, q: str, limit: int) -> list[str]:
    found, cursor = [], None
    for _ in range(50):
        page = search_nodes(graph, default_policy(), q=q, kind="table", limit=limit, cursor=cursor)
        found += [hit.id for hit in page.items]
        cursor = page.next_cursor
        if cursor is None:
            return found
    raise AssertionError(f"search for {q!r} never ended: {found}")


@pytest.mark.parametrize("limit", [1, 2, 3, 50])
@pytest.mark.parametrize("q", ["ods.", "ods.订", "path:fs./data/"])
def test_prefix_pages_hold_every_match_once_in_order(graph, q, limit):
    prefix_hits = sorted(i for i in IDS if i.startswith(q))
    found = every_page(graph, q, limit)
    # the prefix stage first, in id order; the substring stage adds only ids not starting with q
    assert found[: len(prefix_hits)] == prefix_hits
    assert len(found) == len(set(found))


def test_a_lower_case_prefix_does_not_return_its_upper_case_twin(graph):
    assert every_page(graph, "path:fs./data/o", 5) == ["path:fs./data/out"]


@pytest.mark.parametrize("limit", [1, 3, 50])
def test_the_protection_plan_pages_hold_every_table_once_in_order(graph, limit):
    """POST /protection/plan pages through the tables with the same plain-string cursor."""
    from watershed.api.http.routers.protection import TABLE_PAGE

    found, after = [], ""
    for _ in range(50):
        page = [row[0] for row in graph.read(TABLE_PAGE, {"after": after, "n": limit})]
        if not page:
            break
        found += page
        after = page[-1]
    assert found == sorted(IDS)
