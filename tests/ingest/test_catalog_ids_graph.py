"""Issue 13 bug 3 in a real FalkorDB: a table of another catalog loads as a Table node with its
columns, its id `cat2:db2.t1`, and lineage runs through it like through any table."""

from __future__ import annotations

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

TASKS = {
    "into_cat2": "INSERT INTO cat2.db2.t1 SELECT a FROM spark_catalog.ods.s",
    "from_cat2": "INSERT INTO dw.o SELECT a FROM cat2.db2.t1",
}


def test_a_table_of_another_catalog_is_a_table_node(graph_store) -> None:
    catalog = Catalog()
    items = []
    for task_id, sql in TASKS.items():
        task = SqlTask(task_id=task_id, sql=sql, dialect="spark")
        lineage = extract_lineage(task, catalog)
        assert not lineage.errors and not lineage.unresolved
        items.append((task, lineage))
    graph_store.upsert_tasks(items, catalog)

    nodes = {n.id: n for n in graph_store.nodes(["cat2:db2.t1", "cat2:db2.t1.a", "ods.s.a"])}
    assert nodes["cat2:db2.t1"].label == "Table"
    assert nodes["cat2:db2.t1"].properties["db"] == "cat2:db2"
    assert nodes["cat2:db2.t1"].properties["name"] == "t1"
    assert nodes["cat2:db2.t1.a"].label == "Column"
    assert nodes["cat2:db2.t1.a"].properties["table"] == "cat2:db2.t1"

    up = graph_store.lineage("dw.o.a", "upstream", depth=5)
    assert {(e.source, e.target) for e in up.edges} == {
        ("cat2:db2.t1.a", "dw.o.a"),
        ("ods.s.a", "cat2:db2.t1.a"),
    }
    tables = graph_store.lineage("dw.o", "upstream", depth=5, level="table")
    assert {e.source for e in tables.edges} == {"cat2:db2.t1", "ods.s"}
