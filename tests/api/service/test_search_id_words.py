"""Search's id-word stage: the words of an id (cut at `.`, `_`, `-`, ...) are kept in the graph's
full-text index by the write that creates the node, and a query's words are found as their
prefixes, on both backends: it replaced a scan of every column id for a substring (88 ms at 1M
columns, 250 ms when matches were rare). Nodes written before the property existed get it from
`ensure_schema`, once."""

from __future__ import annotations

from tests.support.neo4j_plans import operators_of
from tests.support.reads_kept import ReadsKept
from watershed.api.service.search import has_words, search_nodes, words_of
from watershed.graph.catalog import Catalog
from watershed.propagation.policy import default_policy

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "sales.orders": {"columns": ["customer_id", "order_date", "amount"]},
            "sales.customer": {"columns": ["id", "name"]},
            "crm.customer_orders": {"columns": ["cust_ref"]},
            "ods.o-2024": {"columns": ["LoadedAt"]},
        }
    }
)


def found(store, q, **kw):
    return [hit.id for hit in search_nodes(store, default_policy(), q=q, **kw).items]


def test_words_of_an_id_and_their_prefixes():
    assert words_of("sales.orders.customer_id") == ["sales", "orders", "customer", "id"]
    assert words_of("ods.`o-2024`.x") == ["ods", "o", "2024", "x"]
    assert has_words("sales.orders.customer_id", ["order", "cust"])
    assert not has_words("sales.orders.customer_id", ["stomer"])
    assert not has_words("sales.orders.customer_id", [])


def test_a_query_s_words_find_ids_whose_words_start_with_them(backend_store):
    backend_store.upsert_catalog(CATALOG)
    # every word must start a word of the id; a part inside a word is no match
    assert sorted(found(backend_store, "cust", kind="column")) == [
        "crm.customer_orders.cust_ref",
        "sales.customer.id",
        "sales.customer.name",
        "sales.orders.customer_id",
    ]
    assert sorted(found(backend_store, "order cust", kind="column")) == [
        "crm.customer_orders.cust_ref",
        "sales.orders.customer_id",
    ]
    assert found(backend_store, "stomer") == []
    assert found(backend_store, "2024", kind="table") == ["ods.o-2024"]
    # a name's camel case is lowercased with the id: `loaded` is the start of the word `loadedat`
    assert found(backend_store, "loaded") == ["ods.o-2024.loadedat"]
    assert found(backend_store, "cust", kind="column", db="crm") == ["crm.customer_orders.cust_ref"]


def test_exact_then_name_prefix_then_word_prefix_then_description(backend_store):
    backend_store.upsert_catalog(CATALOG)
    backend_store.write_all(
        [("MATCH (n:Column {id: 'sales.orders.amount'}) SET n.description = 'Paid by the customer'", {})]
    )
    assert found(backend_store, "customer") == [
        "sales.customer",  # the name is the query
        "crm.customer_orders",  # the name starts with it
        "sales.orders.customer_id",
        "crm.customer_orders.cust_ref",  # a word of the id starts with it
        "sales.customer.id",
        "sales.customer.name",
        "sales.orders.amount",  # the description alone
    ]


def test_a_node_is_found_right_after_the_write_creating_it(backend_store):
    backend_store.upsert_catalog(CATALOG)
    assert found(backend_store, "refund") == []
    backend_store.upsert_catalog(
        Catalog.from_dict({"tables": {"sales.orders": {"columns": ["refund_total"]}}})
    )
    assert found(backend_store, "refund tot") == ["sales.orders.refund_total"]
    backend_store.upsert_catalog(Catalog.from_dict({"tables": {"fin.refunds": {"columns": ["x"]}}}))
    assert found(backend_store, "refund", kind="table") == ["fin.refunds"]


def _unmark_backfill(store) -> None:
    """Forget that the backfill ran, as on a graph an older Watershed wrote."""
    if hasattr(store, "graph_name"):
        store.client.connection.delete(f"watershed:{store.graph_name}:backfilled:id_words")
    else:
        store.execute("MATCH (s:WatershedStamp {name: '#backfilled:id_words'}) DELETE s")


def test_ensure_schema_gives_nodes_written_before_the_index_their_words(backend_store, monkeypatch):
    # written as before `id_words` existed: no property, so the index has no words for them
    backend_store.execute(
        "UNWIND range(1, 7) AS i MERGE (t:Table {id: 'legacy.t_' + toString(i)}) "
        "CREATE (t)-[:HAS_COLUMN]->(:Column {id: 'legacy.t_' + toString(i) + '.old_value', name: 'old_value'})"
    )
    assert found(backend_store, "old val") == []
    _unmark_backfill(backend_store)
    # several batches on FalkorDB (ranges of internal ids); Neo4j batches in its own transactions
    monkeypatch.setattr(f"{type(backend_store).__module__}.BACKFILL_BATCH", 3)
    backend_store.ensure_schema()
    assert sorted(found(backend_store, "old val")) == [f"legacy.t_{i}.old_value" for i in range(1, 8)]
    assert found(backend_store, "legacy t 3", kind="table") == ["legacy.t_3"]
    # done once: a node written the old way afterwards is left alone, and running it again is safe
    backend_store.execute("CREATE (:Table {id: 'legacy.late'})")
    backend_store.ensure_schema()
    assert found(backend_store, "late", kind="table") == []
    _unmark_backfill(backend_store)
    backend_store.ensure_schema()
    assert found(backend_store, "late", kind="table") == ["legacy.late"]
    assert len(found(backend_store, "old val")) == 7


def test_the_id_word_stage_seeks_only_the_index_s_candidates_on_falkordb(graph_store):
    from watershed.graph.falkordb_store import FULLTEXT_QUERY

    graph_store.upsert_catalog(CATALOG)
    kept = ReadsKept(graph_store)
    assert [hit.id for hit in search_nodes(kept, default_policy(), q="order cust", kind="column").items] == [
        "crm.customer_orders.cust_ref",
        "sales.orders.customer_id",
    ]
    (query, params), *_ = [
        (q, p) for q, p in kept.reads if "UNWIND $ids" in q and "NOT n.id STARTS WITH" in q
    ]
    plan = str(graph_store.graph.explain(query, params))
    assert "Node By Index Scan" in plan and "Label Scan" not in plan, plan
    index_plan = str(
        graph_store.graph.explain(
            FULLTEXT_QUERY, {"label": "Column", "query": "@id_words:(order* cust*)", "skip": 0, "n": 10}
        )
    )
    assert "ProcedureCall" in index_plan and "Scan" not in index_plan, index_plan


def test_the_id_word_stage_seeks_only_the_index_s_candidates_on_neo4j(neo4j_store):
    neo4j_store.upsert_catalog(CATALOG)
    kept = ReadsKept(neo4j_store)
    assert [hit.id for hit in search_nodes(kept, default_policy(), q="order cust", kind="column").items] == [
        "crm.customer_orders.cust_ref",
        "sales.orders.customer_id",
    ]
    (query, params), *_ = [
        (q, p) for q, p in kept.reads if "UNWIND $ids" in q and "NOT n.id STARTS WITH" in q
    ]
    index_query = (
        "CALL db.index.fulltext.queryNodes($index, $query) YIELD node RETURN node.id SKIP $skip LIMIT $n"
    )
    index_params = {"index": "watershed_column_id_words", "query": "order* AND cust*", "skip": 0, "n": 10}
    plans = {
        name: [
            operator
            for operator, _ in operators_of(
                neo4j_store.driver.execute_query("EXPLAIN " + statement, args, database_="neo4j").summary.plan
            )
        ]
        for name, statement, args in [("seek", query, params), ("index", index_query, index_params)]
    }
    assert not [name for names in plans.values() for name in names if "Scan" in name], plans
    assert "NodeUniqueIndexSeek" in plans["seek"] and "ProcedureCall" in plans["index"], plans
