"""The GraphStore contract, on both backends: a real FalkorDB server and a live Neo4j 5.

`backend_store` (tests/support/neo4j.py) runs each test once per backend; what one backend stores
differently from the other is the product's bug, not the test's.
"""

from __future__ import annotations

from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage

CATALOG = Catalog.from_dict(
    {"tables": {"ods.u": {"columns": ["uid", "email", "app"], "partitioned_by": ["dt"], "ttl_days": 30}}}
)
SQL = {
    "t1": "INSERT OVERWRITE TABLE dwd.u SELECT uid, upper(email) AS email, app FROM ods.u WHERE dt = '2024-01-31' AND app = 'a'",
    "t2": "INSERT OVERWRITE TABLE dws.s SELECT app, count(DISTINCT uid) AS n, max(email) AS e FROM dwd.u GROUP BY app",
    "t3": "INSERT OVERWRITE TABLE ads.r SELECT s.e, j.x FROM dws.s s JOIN ods.j j ON s.app = j.app",
}


def load(store, sql=SQL):
    items = []
    for task_id, text in sql.items():
        task = SqlTask(task_id=task_id, sql=text)
        items.append((task, extract_lineage(task, CATALOG)))
    return store.upsert_tasks(items, CATALOG)


def test_load_creates_nodes_and_edges(backend_store):
    result = load(backend_store)
    assert result.loaded == 3 and result.unchanged == 0
    stats = backend_store.stats()
    assert stats.tasks == 3
    assert stats.column_edges == result.column_edges == 3 + 3 + 2
    assert stats.weak_edges == result.weak_edges
    assert stats.table_edges == 4


def test_a_task_node_keeps_its_sql_text_for_the_steward(backend_store):
    load(backend_store)
    changed = {**SQL, "t2": SQL["t2"].replace("max(email)", "min(email)")}
    load(backend_store, changed)
    stored = dict(backend_store.read("MATCH (k:Task) RETURN k.id, k.sql"))
    assert stored == changed


def test_reloading_the_same_versions_changes_nothing(backend_store):
    load(backend_store)
    before = backend_store.stats()
    again = load(backend_store)
    assert again.loaded == 0 and again.unchanged == 3
    assert backend_store.stats() == before


def test_new_version_replaces_exactly_that_tasks_edges(backend_store):
    load(backend_store)
    before = backend_store.stats()
    changed = {
        **SQL,
        "t2": "INSERT OVERWRITE TABLE dws.s SELECT app, max(email) AS e FROM dwd.u GROUP BY app",
    }
    result = load(backend_store, changed)
    assert result.loaded == 1 and result.unchanged == 2
    after = backend_store.stats()
    assert after.column_edges == before.column_edges - 1  # t2 lost its count(distinct uid) edge
    up = backend_store.lineage("ads.r.e", "upstream", depth=10)
    assert {(e.source, e.target) for e in up.edges} == {
        ("dws.s.e", "ads.r.e"),
        ("dwd.u.email", "dws.s.e"),
        ("ods.u.email", "dwd.u.email"),
    }


def test_deleting_a_task_removes_its_edges(backend_store):
    load(backend_store)
    backend_store.delete_tasks(["t3"])
    stats = backend_store.stats()
    assert stats.tasks == 2 and stats.table_edges == 2
    assert backend_store.lineage("dws.s.e", "downstream").edges == []


def test_lineage_queries_return_nodes_and_edge_properties(backend_store):
    load(backend_store)
    down = backend_store.lineage("ods.u.email", "downstream", depth=10)
    edges = {(e.source, e.target): e.properties for e in down.edges}
    assert edges[("ods.u.email", "dwd.u.email")] == {
        "task": "t1",
        "kind": "expression",
        "functions": ["upper"],
    }
    assert edges[("dwd.u.email", "dws.s.e")]["kind"] == "aggregate"
    assert {n.id for n in down.nodes} == {"ods.u.email", "dwd.u.email", "dws.s.e", "ads.r.e"}
    shallow = backend_store.lineage("ods.u.email", "downstream", depth=1)
    assert [(e.source, e.target) for e in shallow.edges] == [("ods.u.email", "dwd.u.email")]
    tables = backend_store.lineage("ads.r", "upstream", depth=5, level="table")
    assert {e.source for e in tables.edges} == {"dws.s", "ods.j", "dwd.u", "ods.u"}


def test_neighbours_of_a_batch_and_search(backend_store):
    load(backend_store)
    out = backend_store.neighbours(["ods.u.app", "dwd.u.app"], "downstream")
    assert {(e.target, e.type, e.properties.get("role")) for e in out["ods.u.app"]} == {
        ("dwd.u.app", "FLOWS_TO", None),
        ("dwd.u", "INFLUENCES", "filter"),
    }
    assert {e.target for e in out["dwd.u.app"]} >= {"dws.s.app", "dws.s"}
    found = backend_store.search("dws.")
    assert ("dws.s", "Table") in found and ("dws.s.e", "Column") in found


def test_reads_carry_predicates_and_window(backend_store):
    load(backend_store)
    rows = backend_store.read(
        "MATCH (k:Task {id: 't1'})-[r:READS]->(t:Table) RETURN t.id, r.predicates, r.partition_window"
    )
    assert rows == [["ods.u", ["dt = '2024-01-31'", "app = 'a'"], 1]]
    table = backend_store.nodes(["ods.u"])[0]
    assert table.properties["ttl_days"] == 30


def test_catalog_first_then_tasks_gives_the_same_graph(backend_store):
    columns = backend_store.upsert_catalog(CATALOG)
    assert columns == 4  # uid, email, app, dt
    assert backend_store.nodes(["ods.u.email"])[0].properties["type"] == "string"
    result = load(backend_store)
    stats = backend_store.stats()
    assert stats.column_edges == result.column_edges == 8
    # each column exists once, however many loads named it
    rows = backend_store.read("MATCH (c:Column) WITH c.id AS id, count(*) AS n WHERE n > 1 RETURN id")
    assert rows == []


def test_parameters_with_quotes_and_braces_round_trip(backend_store):
    tricky = ['say "hi"', "back\\slash", "{a}: b", 'x":', "naïve"]
    rows = [[t, {"k": t}] for t in tricky]
    backend_store.write_all([("UNWIND $rows AS r CREATE (:Probe {v: r[0], m: r[1].k})", {"rows": rows})])
    stored = sorted(tuple(row) for row in backend_store.read("MATCH (p:Probe) RETURN p.v, p.m"))
    assert stored == sorted((t, t) for t in tricky)


def test_falkordb_parameters_are_cypher_literals():
    from watershed.graph.falkordb_store import cypher_literal

    assert cypher_literal({"rows": [["a"]]}) == '{rows: [["a"]]}'
