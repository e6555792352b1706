"""The planner lists a table's columns in the catalog's order, then by name, whatever order the
backend returns the graph's rows in (Neo4j's is not FalkorDB's: the same graph planned the same
DDL with its columns swapped)."""

from __future__ import annotations

from watershed.orc_crypto.protect.plan import read_catalog


def test_columns_come_in_the_catalogs_order_then_by_name(graph_store):
    graph_store.execute(
        "CREATE (t:Table {id: 'db.t', column_order: ['b', 'a']}), (u:Table {id: 'db.u'}) "
        "CREATE (t)-[:HAS_COLUMN]->(:Column {id: 'db.t.a', name: 'a'}) "
        "CREATE (t)-[:HAS_COLUMN]->(:Column {id: 'db.t.z', name: 'z'}) "
        "CREATE (t)-[:HAS_COLUMN]->(:Column {id: 'db.t.b', name: 'b'}) "
        "CREATE (u)-[:HAS_COLUMN]->(:Column {id: 'db.u.z', name: 'z'}) "
        "CREATE (u)-[:HAS_COLUMN]->(:Column {id: 'db.u.y', name: 'y'})"
    )
    catalog = read_catalog(graph_store, ["db.t", "db.u"])
    assert [c.name for c in catalog["db.t"].columns] == ["b", "a", "z"]
    assert [c.name for c in catalog["db.u"].columns] == ["y", "z"]
