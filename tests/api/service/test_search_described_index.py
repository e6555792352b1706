"""Search's description stage asks the graph's full-text index (FalkorDB's RediSearch index, Neo4j's
Lucene index) for candidates, then checks every word as typed: at 1M columns the scan of every
column's description it replaced took 0.5-1.5 s (bench/ui_pages_bench.py). A word is looked up by
the start of a word of the description; a user's word is never index query syntax."""

from __future__ import annotations

import pytest

from tests.support.reads_kept import ReadsKept
from watershed.api.service.search import search_nodes
from watershed.graph.catalog import Catalog
from watershed.propagation.policy import default_policy

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "ods.users": {"columns": ["uid", "email", "phone", "ratio", "note"]},
            "ods.orders": {"columns": ["oid", "amount"]},
        }
    }
)
DESCRIPTIONS = {
    "ods.users.uid": "The user's ID",
    "ods.users.email": "The user's email address",
    "ods.users.phone": "Phone number, normalised (E.164)",
    "ods.users.ratio": 'Gross-margin ratio "net" a:b (beta) x*y',
    "ods.users.note": "用户的备注",
    "ods.orders.amount": "Order amount in cents",
    "ods.orders": "Orders from the shop",
}

USER_COLUMNS = [f"ods.users.{name}" for name in ("email", "note", "phone", "ratio", "uid")]


def described(store, descriptions=DESCRIPTIONS):
    store.upsert_catalog(CATALOG)
    store.write_all(
        [
            ("MATCH (n {id: $id}) WHERE n:Table OR n:Column SET n.description = $text", {"id": i, "text": t})
            for i, t in descriptions.items()
        ]
    )
    return store


def found(store, q, kind="column", **kw):
    return [hit.id for hit in search_nodes(store, default_policy(), q=q, kind=kind, **kw).items]


def test_the_index_answers_nodes_having_a_word_starting_with_each_word(backend_store):
    described(backend_store)
    matches = backend_store.description_matches
    assert sorted(matches("Column", ["user"], 0, 10)) == ["ods.users.email", "ods.users.uid"]
    assert matches("Column", ["USER'S", "addr"], 0, 10) == ["ods.users.email"]
    assert matches("Table", ["shop"], 0, 10) == ["ods.orders"]
    assert matches("Column", ["shop"], 0, 10) == []  # a table's description, not a column's
    assert matches("Column", ["ser"], 0, 10) == []  # inside a word: not a word's start
    # pages of the index's order: together every match, once
    first, rest = matches("Column", ["the"], 0, 1), matches("Column", ["the"], 1, 10)
    assert len(first) == 1 and sorted(first + rest) == ["ods.users.email", "ods.users.uid"]
    # no letter or digit: nothing to ask the index
    assert matches("Column", ["--", "*"], 0, 10) == []


@pytest.mark.parametrize(
    "q, ids",
    [
        ('"net"', ["ods.users.ratio"]),
        ("gross-margin", ["ods.users.ratio"]),
        ("a:b", ["ods.users.ratio"]),
        ("(beta", ["ods.users.ratio"]),
        ("x*", ["ods.users.ratio"]),
        ("(e.164)", ["ods.users.phone"]),
        # query syntax in either index, as words: nothing holds them, nothing is an error
        ("*", []),
        ('"', []),
        # ... though `user` and `not` start words of ids: the id-word stage finds those
        ("-user", USER_COLUMNS),
        ("user:*", USER_COLUMNS),
        ("email OR cents", []),
        ("NOT user", ["ods.users.note"]),
        ("(((", []),
        ("\\", []),
    ],
)
def test_a_word_with_index_syntax_characters_is_searched_as_typed(backend_store, q, ids):
    described(backend_store)
    assert sorted(found(backend_store, q)) == ids


def test_every_word_must_match_and_the_index_follows_each_write(backend_store):
    described(backend_store)
    assert found(backend_store, "amount cents") == ["ods.orders.amount"]
    assert found(backend_store, "amount euros") == []
    assert found(backend_store, "cents", db="ods") == ["ods.orders.amount"]
    assert found(backend_store, "cents", db="dwd") == []
    backend_store.write_all(
        [("MATCH (n:Column {id: 'ods.orders.amount'}) SET n.description = 'Order amount in euros'", {})]
    )
    assert found(backend_store, "amount euros") == ["ods.orders.amount"]
    assert found(backend_store, "cents") == []


def test_a_chinese_word_finds_its_description(backend_store):
    described(backend_store)
    assert found(backend_store, "用户") == ["ods.users.note"]


def test_the_description_stage_reads_no_column_but_the_index_s_candidates(graph_store):
    from watershed.graph.falkordb_store import FULLTEXT_QUERY as INDEX_QUERY

    described(graph_store)
    kept = ReadsKept(graph_store)
    page = search_nodes(kept, default_policy(), q="email address", kind="column")
    assert [hit.id for hit in page.items] == ["ods.users.email"]
    assert page.items[0].description == "The user's email address"

    (query, params), *_ = [(q, p) for q, p in kept.reads if "UNWIND $ids" in q and "description" in q]
    plan = str(graph_store.graph.explain(query, params))
    # the candidates sought by id: no scan of every column
    assert "Node By Index Scan" in plan and "Label Scan" not in plan, plan
    index_plan = str(
        graph_store.graph.explain(INDEX_QUERY, {"label": "Column", "query": "email*", "skip": 0, "n": 10})
    )
    assert "ProcedureCall" in index_plan and "Scan" not in index_plan, index_plan


def test_pages_past_the_ranked_window_walk_the_index_s_candidates_once(backend_store):
    """Past the first 500 (ranked) a page reads on from its place in the index's answer, which
    counts the candidates the conditions dropped too (`dwd.other`'s, outside `db`)."""
    names = [f"c{i:03d}" for i in range(620)]
    backend_store.upsert_catalog(
        Catalog.from_dict({"tables": {"ods.wide": {"columns": names}, "dwd.other": {"columns": names[:40]}}})
    )
    backend_store.write_all(
        [
            (
                "MATCH (n:Column) WHERE n.id STARTS WITH 'ods.wide.' OR n.id STARTS WITH 'dwd.' "
                "SET n.description = 'Metric number ' + n.name",
                {},
            )
        ]
    )
    seen, cursor = [], None
    while True:
        page = search_nodes(
            backend_store, default_policy(), q="metric", kind="column", db="ods", limit=200, cursor=cursor
        )
        seen += [hit.id for hit in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(seen) == [f"ods.wide.{name}" for name in names]
