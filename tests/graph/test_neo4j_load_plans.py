"""A Neo4j load's column statements on a live Neo4j: the columns a catalog brings are created
without an `Eager` in any plan, once each, with their table marked, also by loaders racing on the
same new columns (docs/graph.md, "first load")."""

from __future__ import annotations

import threading

from tests.support.neo4j_plans import plan_operators
from watershed.graph.catalog import Catalog, CatalogColumn, CatalogTable
from watershed.graph.neo4j_store import Neo4jStore


class _RecordingTx:
    def __init__(self, tx, sent: list) -> None:
        self.tx = tx
        self.sent = sent

    def run(self, query, params=None):
        self.sent.append((query, params or {}))
        return self.tx.run(query, params)


class _RecordingSession:
    """A session whose write transactions record each statement they run (and run it)."""

    def __init__(self, session, sent: list) -> None:
        self.session = session
        self.sent = sent

    def execute_write(self, work, *args, **kwargs):
        return self.session.execute_write(
            lambda tx, *a, **k: work(_RecordingTx(tx, self.sent), *a, **k), *args, **kwargs
        )

    def __getattr__(self, name):
        return getattr(self.session, name)


class _RecordingDriver:
    def __init__(self, driver, sent: list) -> None:
        self.driver = driver
        self.sent = sent

    def session(self, **kwargs):
        return _RecordingSession(self.driver.session(**kwargs), self.sent)

    def __getattr__(self, name):
        return getattr(self.driver, name)


def catalog(tables: dict[str, list[str]]) -> Catalog:
    return Catalog(
        tables={
            name: CatalogTable(name=name, columns=[CatalogColumn(name=c, type="int") for c in columns])
            for name, columns in tables.items()
        }
    )


def test_a_catalog_load_creates_its_columns_with_no_eager_in_any_plan(neo4j_store):
    sent: list = []
    recording = neo4j_store.driver = _RecordingDriver(neo4j_store.driver, sent)
    neo4j_store.upsert_catalog(catalog({"db.a": ["x", "y"], "db.b": ["z"]}))
    neo4j_store.driver = recording.driver

    creating = [(query, params) for query, params in sent if "HAS_COLUMN" in query]
    assert creating, sent
    for query, params in creating:
        # an Eager holds every row of the batch before the first CREATE (the read of Column ids
        # and the CREATE of Columns in one statement)
        assert "Eager" not in plan_operators(neo4j_store, query, params), query
    rows = neo4j_store.read(
        "MATCH (t:Table)-[:HAS_COLUMN]->(c:Column) "
        "RETURN c.id, c.table, c.name, c.type, c.id_words, c.created_at IS NOT NULL ORDER BY c.id"
    )
    assert rows == [
        ["db.a.x", "db.a", "x", "int", "db a x", True],
        ["db.a.y", "db.a", "y", "int", "db a y", True],
        ["db.b.z", "db.b", "z", "int", "db b z", True],
    ]


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
    # each loader reads which columns are missing, then creates them: a loader that read before
    # another's commit would fail on the uniqueness constraint, but each first writes the columns'
    # tables (MERGE_TABLES) and so waits for the other's commit (with the tables left out of the
    # load, three of the four loaders here failed)
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
