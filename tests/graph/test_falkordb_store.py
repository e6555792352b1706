"""The GraphStore contract on a real FalkorDB server."""

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


def test_load_creates_nodes_and_edges(graph_store):
    result = load(graph_store)
    assert result.loaded == 3 and result.unchanged == 0
    stats = graph_store.stats()
    assert stats.tasks == 3
    assert stats.column_edges == result.column_edges == 3 + 3 + 2
    assert stats.weak_edges == result.weak_edges
    assert stats.table_edges == 4


def test_a_task_node_keeps_its_sql_text_for_the_steward(graph_store):
    load(graph_store)
    changed = {**SQL, "t2": SQL["t2"].replace("max(email)", "min(email)")}
    load(graph_store, changed)
    stored = dict(graph_store.read("MATCH (k:Task) RETURN k.id, k.sql"))
    assert stored == changed


def test_reloading_the_same_versions_changes_nothing(graph_store):
    load(graph_store)
    before = graph_store.stats()
    again = load(graph_store)
    assert again.loaded == 0 and again.unchanged == 3
    assert graph_store.stats() == before


def test_new_version_replaces_exactly_that_tasks_edges(graph_store):
    load(graph_store)
    before = graph_store.stats()
    changed = {
        **SQL,
        "t2": "INSERT OVERWRITE TABLE dws.s SELECT app, max(email) AS e FROM dwd.u GROUP BY app",
    }
    result = load(graph_store, changed)
    assert result.loaded == 1 and result.unchanged == 2
    after = graph_store.stats()
    assert after.column_edges == before.column_edges - 1  # t2 lost its count(distinct uid) edge
    up = graph_store.lineage("ads.r.e", "upstream", depth=10)
    assert {(e.source, e.target) for e in up.edges} == {
        ("dws.s.e", "ads.r.e"),
        ("dwd.u.email", "dws.s.e"),
        ("ods.u.email", "dwd.u.email"),
    }


def test_deleting_a_task_removes_its_edges(graph_store):
    load(graph_store)
    graph_store.delete_tasks(["t3"])
    stats = graph_store.stats()
    assert stats.tasks == 2 and stats.table_edges == 2
    assert graph_store.lineage("dws.s.e", "downstream").edges == []


def test_lineage_queries_return_nodes_and_edge_properties(graph_store):
    load(graph_store)
    down = graph_store.lineage("ods.u.email", "downstream", depth=10)
    edges = {(e.source, e.target): e.properties for e in down.edges}
    assert edges[("ods.u.email", "dwd.u.email")] == {
        "task": "t1",
        "kind": "expression",
        "functions": ["upper"],
    }
    assert edges[("dwd.u.email", "dws.s.e")]["kind"] == "aggregate"
    assert {n.id for n in down.nodes} == {"ods.u.email", "dwd.u.email", "dws.s.e", "ads.r.e"}
    shallow = graph_store.lineage("ods.u.email", "downstream", depth=1)
    assert [(e.source, e.target) for e in shallow.edges] == [("ods.u.email", "dwd.u.email")]
    tables = graph_store.lineage("ads.r", "upstream", depth=5, level="table")
    assert {e.source for e in tables.edges} == {"dws.s", "ods.j", "dwd.u", "ods.u"}


def test_neighbours_of_a_batch_and_search(graph_store):
    load(graph_store)
    out = graph_store.neighbours(["ods.u.app", "dwd.u.app"], "downstream")
    assert {(e.target, e.type, e.properties.get("role")) for e in out["ods.u.app"]} == {
        ("dwd.u.app", "FLOWS_TO", None),
        ("dwd.u", "INFLUENCES", "filter"),
    }
    assert {e.target for e in out["dwd.u.app"]} >= {"dws.s.app", "dws.s"}
    found = graph_store.search("dws.")
    assert ("dws.s", "Table") in found and ("dws.s.e", "Column") in found


def test_reads_carry_predicates_and_window(graph_store):
    load(graph_store)
    rows = graph_store.read(
        "MATCH (k:Task {id: 't1'})-[r:READS]->(t:Table) RETURN t.id, r.predicates, r.partition_window"
    )
    assert rows == [["ods.u", ["dt = '2024-01-31'", "app = 'a'"], 1]]
    table = graph_store.nodes(["ods.u"])[0]
    assert table.properties["ttl_days"] == 30


def test_catalog_first_then_tasks_gives_the_same_graph(graph_store):
    columns = graph_store.upsert_catalog(CATALOG)
    assert columns == 4  # uid, email, app, dt
    assert graph_store.nodes(["ods.u.email"])[0].properties["type"] == "string"
    result = load(graph_store)
    stats = graph_store.stats()
    assert stats.column_edges == result.column_edges == 8
    # each column exists once, however many loads named it
    rows = graph_store.read("MATCH (c:Column) WITH c.id AS id, count(*) AS n WHERE n > 1 RETURN id")
    assert rows == []


def test_parameters_with_quotes_and_braces_round_trip(graph_store):
    from watershed.graph.falkordb_store import cypher_literal

    tricky = ['say "hi"', "back\\slash", "{a}: b", 'x":', "naïve"]
    rows = [[t, {"k": t}] for t in tricky]
    graph_store.write_all([("UNWIND $rows AS r CREATE (:Probe {v: r[0], m: r[1].k})", {"rows": rows})])
    stored = sorted(tuple(row) for row in graph_store.read("MATCH (p:Probe) RETURN p.v, p.m"))
    assert stored == sorted((t, t) for t in tricky)
    assert cypher_literal({"rows": [["a"]]}) == '{rows: [["a"]]}'
