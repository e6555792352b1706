"""Search ranks, counts and forgives a typo (api/service/search.py), on FalkorDB and on Neo4j:
an exact name before a prefix before a substring, the roots where tags start before the derived
columns (it listed ADS columns first, alphabetically); a total beside the page; `phone_nrm` finds
`phone_norm` (it found nothing); a table holding a pii column says so."""

from __future__ import annotations

import json

import pytest

from watershed.api.service import search
from watershed.api.service.search import one_edit_apart, search_nodes
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.propagation.policy import default_policy

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "ods.users": {"columns": ["uid", "email", "phone_norm"]},
            "dwd.users": {"columns": ["uid", "email", "email_hash"]},
            "ads.report": {"columns": ["uid", "email", "owner_email"]},
        }
    }
)
TASKS = {
    "t_dwd": "INSERT OVERWRITE TABLE dwd.users SELECT uid, email, md5(email) AS email_hash FROM ods.users",
    "t_ads": "INSERT OVERWRITE TABLE ads.report SELECT uid, email, email AS owner_email FROM dwd.users",
}
TAGGED = {"ods.users.email": ["L3"], "dwd.users.email": ["L3"]}


@pytest.fixture
def graph(backend_store):
    items = [
        (SqlTask(task_id=t, sql=sql), extract_lineage(SqlTask(task_id=t, sql=sql), CATALOG))
        for t, sql in TASKS.items()
    ]
    backend_store.upsert_catalog(CATALOG)
    backend_store.upsert_tasks(items, CATALOG)
    backend_store.write_all(
        [
            (
                "MATCH (c:Column {id: $id}) SET c.tags = $tags",
                {"id": node, "tags": json.dumps({"pii": {"v": levels}})},
            )
            for node, levels in TAGGED.items()
        ]
    )
    return backend_store


def ids(page) -> list[str]:
    return [hit.id for hit in page.items]


def test_exact_then_prefix_then_substring_roots_and_tagged_first(graph):
    page = search_nodes(graph, default_policy(), q="email", kind="column")
    # exact names first: the root, then the tagged derived column, then the untagged one;
    # then a name starting with the query, then one holding it
    assert ids(page) == [
        "ods.users.email",
        "dwd.users.email",
        "ads.report.email",
        "dwd.users.email_hash",
        "ads.report.owner_email",
    ]
    assert page.total == 5 and not page.total_bounded and not page.approximate


def test_the_total_is_every_match_whatever_the_page_and_pages_walk_the_ranking(graph):
    policy = default_policy()
    first = search_nodes(graph, policy, q="email", kind="column", limit=2)
    assert first.total == 5 and len(first.items) == 2
    seen, cursor = ids(first), first.next_cursor
    while cursor:
        page = search_nodes(graph, policy, q="email", kind="column", limit=2, cursor=cursor)
        assert page.total == 5
        seen += ids(page)
        cursor = page.next_cursor
    assert seen == ids(search_nodes(graph, policy, q="email", kind="column"))


def test_past_the_ranked_window_pages_read_on_with_a_bounded_total(graph, monkeypatch):
    policy = default_policy()
    every = ids(search_nodes(graph, policy, q="email", kind="column", limit=50))
    monkeypatch.setattr(search, "RANK_WINDOW", 2)
    first = search_nodes(graph, policy, q="email", kind="column", limit=2)
    assert first.total == 2 and first.total_bounded
    seen = ids(first) + _pages_after(graph, policy, first, q="email", kind="column", limit=2)
    assert sorted(seen) == sorted(every) and len(every) == 5


def _pages_after(graph, policy, page, **query) -> list[str]:
    """The ids of every page after `page`, followed by its cursors."""
    seen, cursor = [], page.next_cursor
    while cursor:
        page = search_nodes(graph, policy, cursor=cursor, **query)
        seen += ids(page)
        cursor = page.next_cursor
    return seen


def test_a_typo_finds_the_name_one_edit_away(graph):
    page = search_nodes(graph, default_policy(), q="phone_nrm")
    assert ids(page) == ["ods.users.phone_norm"] and page.approximate and page.total == 1
    assert ids(search_nodes(graph, default_policy(), q="ods.users.phone_nrm")) == ["ods.users.phone_norm"]
    assert ids(search_nodes(graph, default_policy(), q="phone_nrm", db="dwd")) == []
    assert ids(search_nodes(graph, default_policy(), q="emial", kind="table")) == []


def test_a_table_with_a_sensitive_column_says_so(graph):
    hits = {hit.id: hit for hit in search_nodes(graph, default_policy(), q="users", kind="table").items}
    assert hits["ods.users"].sensitive == ["pii"] and hits["dwd.users"].sensitive == ["pii"]
    assert search_nodes(graph, default_policy(), q="ads.report", kind="table").items[0].sensitive == []


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("phone_nrm", "phone_norm", True),
        ("phone_norm", "phone_nrm", True),
        ("phone_norm", "phone_nrom", True),
        ("phone_norm", "phone_narm", True),
        ("phone_norm", "phone_norm", False),
        ("phone_norm", "phone_nr", False),
        ("phone_norm", "hpone_nrom", False),
    ],
)
def test_one_edit_apart(a, b, near):
    assert one_edit_apart(a, b) is near


def test_an_id_prefix_filling_the_page_reads_no_substring_matches_first(graph):
    policy = default_policy()
    first = search_nodes(graph, policy, q="dwd.users.", kind="column", limit=2)
    # three prefix matches fill a page of two: the substring scan waits for the pages past them
    assert first.total == 3 and first.total_bounded
    seen = ids(first) + _pages_after(graph, policy, first, q="dwd.users.", kind="column", limit=2)
    assert seen == ["dwd.users.email", "dwd.users.email_hash", "dwd.users.uid"]
    whole = search_nodes(graph, policy, q="dwd.users.", kind="column", limit=50)
    assert whole.total == 3 and not whole.total_bounded
