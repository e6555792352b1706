"""A Neo4j load's columns on a live Neo4j: the columns a catalog brings are created once each,
with their table marked, also by loaders racing on the same new columns (docs/graph.md, "first load")."""

from __future__ import annotations

import threading

from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.graph.neo4j_store import Neo4jStore


def catalog(tables: dict[str, list[str]]) -> Catalog:
    return Catalog(
        tables={
            name: CatalogTable(name=name, columns=[CatalogColumn(name=c, type="int") for c in columns])
            for name, columns in tables.items()
        }
    )


def test_only_a_table_with_a_new_column_is_marked_and_no_column_twice(neo4j_store):
    neo4j_store.upsert_catalog(catalog({"db.a": ["x"], "db.b": ["z"]}))
    neo4j_store.execute("MATCH (t:Table) SET t.uses_changed_at = 0")
    neo4j_store.forget_columns()
    neo4j_store.upsert_catalog(catalog({"db.a": ["x", "y"], "db.b": ["z"]}))

    marks = neo4j_store.read("MATCH (t:Table) RETURN t.id, t.uses_changed_at > 0 ORDER BY t.id")
    assert marks == [["db.a", True], ["db.b", False]]
    counts = neo4j_store.read("MATCH (:Table)-[r:HAS_COLUMN]->(c:Column) RETURN count(DISTINCT c), count(r)")
    assert counts == [[3, 3]]


def test_loaders_racing_on_the_same_new_columns_all_load_them_once(neo4j_server, neo4j_store):
    # a column is created only where its locking seek found none: a loader that created one
    # before another's commit would fail on the uniqueness constraint
    many = catalog({f"db.t{i}": [f"c{j}" for j in range(50)] for i in range(40)})
    stores = [Neo4jStore.from_settings(neo4j_server.settings) for _ in range(4)]
    start = threading.Barrier(len(stores))
    errors: list[Exception] = []

    def load(store: Neo4jStore) -> None:
        start.wait()
        try:
            store.upsert_catalog(many)
        except Exception as exc:  # reported below, whatever a loader raised
            errors.append(exc)

    threads = [threading.Thread(target=load, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()

    assert errors == []
    counts = neo4j_store.read("MATCH (:Table)-[r:HAS_COLUMN]->(c:Column) RETURN count(DISTINCT c), count(r)")
    assert counts == [[2000, 2000]]
