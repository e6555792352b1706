"""Issue 11 item 14 in a real FalkorDB: ``ods.x.`y.z` `` and ``ods.`x.y`.z`` stay two columns.

Loaded the way a harvest loads (extracted lineage through `GraphStore.upsert_tasks`, the
catalog first through `upsert_catalog`), each column keeps its own table and name and
each target's lineage is its own.
"""

from __future__ import annotations

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

CATALOG = Catalog.from_dict(
    {"tables": {"ods.x": {"columns": ["k", "y.z"]}, "ods.`x.y`": {"columns": ["k", "z"]}}}
)
TASKS = {
    "from_dotted_column": "INSERT OVERWRITE TABLE dw.o SELECT x.`y.z` AS v FROM ods.x",
    "from_dotted_table": "INSERT OVERWRITE TABLE dw.p SELECT t.z AS v FROM ods.`x.y` t",
}


def _load(store) -> None:
    store.upsert_catalog(CATALOG)
    items = []
    for task_id, sql in TASKS.items():
        task = SqlTask(task_id=task_id, sql=sql)
        lineage = extract_lineage(task, CATALOG)
        assert not lineage.errors and not lineage.unresolved
        items.append((task, lineage))
    store.upsert_tasks(items, CATALOG)


def test_dotted_names_are_two_columns_with_their_own_lineage(graph_store) -> None:
    _load(graph_store)

    nodes = {n.id: n for n in graph_store.nodes(["ods.x.`y.z`", "ods.`x.y`.z", "ods.x", "ods.`x.y`"])}
    assert set(nodes) == {"ods.x.`y.z`", "ods.`x.y`.z", "ods.x", "ods.`x.y`"}
    assert nodes["ods.x.`y.z`"].label == "Column"
    assert nodes["ods.x.`y.z`"].properties["table"] == "ods.x"
    assert nodes["ods.x.`y.z`"].properties["name"] == "y.z"
    assert nodes["ods.`x.y`.z"].properties["table"] == "ods.`x.y`"
    assert nodes["ods.`x.y`.z"].properties["name"] == "z"
    assert nodes["ods.`x.y`"].label == "Table"
    assert nodes["ods.`x.y`"].properties["db"] == "ods"
    assert nodes["ods.`x.y`"].properties["name"] == "x.y"

    first = graph_store.lineage("dw.o.v", "upstream", depth=5)
    second = graph_store.lineage("dw.p.v", "upstream", depth=5)
    assert {(e.source, e.target) for e in first.edges} == {("ods.x.`y.z`", "dw.o.v")}
    assert {(e.source, e.target) for e in second.edges} == {("ods.`x.y`.z", "dw.p.v")}
    assert {n.id: n.properties["table"] for n in first.nodes} == {"ods.x.`y.z`": "ods.x", "dw.o.v": "dw.o"}
    assert {n.id: n.properties["name"] for n in second.nodes} == {"ods.`x.y`.z": "z", "dw.p.v": "v"}

    down = graph_store.lineage("ods.x.`y.z`", "downstream", depth=5)
    assert {e.target for e in down.edges} == {"dw.o.v"}
    tables = graph_store.lineage("dw.p", "upstream", depth=5, level="table")
    assert {e.source for e in tables.edges} == {"ods.`x.y`"}
