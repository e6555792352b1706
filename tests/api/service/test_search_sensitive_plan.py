"""A search page's table hits learn their sensitive families (pii) by an index seek of each table
and a walk to its columns, on FalkorDB: the tag condition written inline made FalkorDB scan every
column once per table on the page (5.5 s for 50 tables at 1M columns; bench/ui_pages_bench.py)."""

from __future__ import annotations

import json

from tests.support.reads_kept import ReadsKept
from watershed.api.service.search import search_nodes
from watershed.graph.catalog import Catalog
from watershed.propagation.policy import default_policy

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "ods.users": {"columns": ["uid", "email"]},
            "ods.orders": {"columns": ["oid", "uid"]},
        }
    }
)


def test_table_hits_learn_their_sensitive_columns_by_index_seek(graph_store):
    graph_store.upsert_catalog(CATALOG)
    graph_store.write_all(
        [
            (
                "MATCH (c:Column {id: 'ods.users.email'}) SET c.tags = $tags",
                {"tags": json.dumps({"pii": {"v": ["L3"]}})},
            )
        ]
    )
    kept = ReadsKept(graph_store)
    page = search_nodes(kept, default_policy(), q="ods.", kind="table")
    assert {hit.id: hit.sensitive for hit in page.items} == {"ods.orders": [], "ods.users": ["pii"]}

    (query, params), *_ = [(q, p) for q, p in kept.reads if "HAS_COLUMN" in q]
    plan = str(graph_store.graph.explain(query, params))
    # the page's tables sought by id, their columns reached from them: no scan of every column
    assert "Node By Index Scan" in plan and "Label Scan" not in plan, plan
