"""`GraphStore.upsert_catalog` writes a large catalog in transactions of bounded size: one
transaction of a whole 1,000,000-column catalog outgrew Neo4j's transaction memory (a 4 GB heap)."""

from __future__ import annotations

from watershed.graph import store as store_module
from watershed.graph.catalog import Catalog
from watershed.graph.queries import MERGE_TABLES


def _catalog(tables: int) -> Catalog:
    return Catalog.from_dict({"tables": {f"db.t{i}": {"columns": ["a", "b"]} for i in range(tables)}})


def _recorded_transactions(store, monkeypatch) -> list[list]:
    """The statements of each `write_all` the store makes from now on (each still runs)."""
    transactions: list[list] = []
    write_all = store.write_all
    monkeypatch.setattr(
        store, "write_all", lambda statements: (transactions.append(statements), write_all(statements))[1]
    )
    return transactions


def test_a_large_catalog_is_written_a_bounded_number_of_tables_per_transaction(graph_store, monkeypatch):
    monkeypatch.setattr(store_module, "CATALOG_TABLES_PER_WRITE", 3)
    transactions = _recorded_transactions(graph_store, monkeypatch)

    assert graph_store.upsert_catalog(_catalog(7)) == 14
    tables_per_transaction = [
        sum(len(params["rows"]) for query, params in statements if query == MERGE_TABLES)
        for statements in transactions
    ]
    assert tables_per_transaction == [3, 3, 1]
    stats = graph_store.stats()
    assert (stats.tables, stats.columns) == (7, 14)

    # each part is idempotent: a load cut between two parts converges when repeated
    graph_store.upsert_catalog(_catalog(7))
    assert graph_store.stats() == stats


def test_a_small_catalog_is_one_transaction(graph_store, monkeypatch):
    transactions = _recorded_transactions(graph_store, monkeypatch)
    graph_store.upsert_catalog(_catalog(5))
    assert len(transactions) == 1
