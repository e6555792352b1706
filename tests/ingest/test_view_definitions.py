"""CREATE VIEW statements carry the view's query (StatementLineage.view_sql), qualified as the
engine resolves it, so the loader can store it and query-time checks read through the view."""

from __future__ import annotations

import sqlglot

from watershed.graph.catalog import Catalog, CatalogTable
from watershed.ingest.points import query_points
from watershed.ingest.statements import StatementExtractor


def _extract(sql: str, dialect: str = "spark", database: str = "db"):
    extractor = StatementExtractor(Catalog(), database, frozenset(), frozenset(), dialect, None)
    return [extractor.extract(node, i, 1) for i, node in enumerate(sqlglot.parse(sql, read=dialect)) if node]


def test_create_view_carries_its_qualified_query():
    (statement,) = _extract("CREATE VIEW v AS SELECT a, b FROM t WHERE x = 1")
    assert (statement.kind, statement.writes) == ("create-view", ["db.v"])
    assert statement.view_sql == "SELECT a, b FROM db.t WHERE x = 1"


def test_unqualified_names_read_in_the_current_database():
    _use, statement = _extract("USE other; CREATE VIEW rpt.v AS SELECT a FROM t JOIN s.u ON t.k = u.k")
    assert statement.writes == ["rpt.v"]
    assert statement.view_sql == "SELECT a FROM other.t JOIN s.u ON t.k = u.k"


def test_declared_columns_and_ctes_are_kept():
    (declared,) = _extract("CREATE OR REPLACE VIEW v (p, q) AS SELECT a, b FROM t")
    assert declared.view_sql == "SELECT * FROM (SELECT a, b FROM db.t) AS _view(p, q)"
    (cte,) = _extract("CREATE VIEW v AS WITH c AS (SELECT a FROM t) SELECT * FROM c")
    assert cte.view_sql == "WITH c AS (SELECT a FROM db.t) SELECT * FROM c"


def test_temporary_view_and_table_carry_none():
    temporary, ctas, table = _extract(
        "CREATE TEMPORARY VIEW tv AS SELECT a FROM t; CREATE TABLE c AS SELECT a FROM t; CREATE TABLE p (a INT)"
    )
    assert (temporary.kind, temporary.view_sql) == ("temporary-view", None)
    assert (ctas.kind, ctas.view_sql) == ("create-table-as", None)
    assert (table.kind, table.view_sql) == ("ddl", None)


def test_hive_view_sql_is_hive_and_reads_back_through_points():
    (statement,) = _extract(
        "CREATE VIEW v AS SELECT `a`, upper(b) AS ub FROM t WHERE dt = '2024-01-01'", "hive"
    )
    assert statement.view_sql == "SELECT `a`, UPPER(b) AS ub FROM db.t WHERE dt = '2024-01-01'"
    catalog = Catalog.from_dict({"tables": {"db.t": {"columns": ["a", "b"], "partitioned_by": ["dt"]}}})
    catalog.with_table(
        CatalogTable(name="db.v", columns=["a", "ub"], view_sql=statement.view_sql, view_dialect="hive")
    )
    p = query_points("SELECT ub FROM db.v", catalog)
    assert [(s.column, s.kind, s.functions) for s in p.columns[0].sources] == [
        ("db.t.b", "expression", ["upper"])
    ]
    assert [(r.table, [c.text for c in r.conditions]) for r in p.rows] == [("db.t", ["dt = '2024-01-01'"])]
