"""Table nodes keep the catalog's column order and views' SQL, and give them back as catalog entries
(GraphStore.catalog_entries), on a real FalkorDB and a live Neo4j 5; the statements are Neo4j 5
Cypher too."""

from __future__ import annotations

from tests.support.cypher_lint import lint
from watershed.graph import queries
from watershed.graph.catalog import Catalog, CatalogTable
from watershed.graph.lineage import SqlTask, StatementLineage, TaskLineage
from watershed.ingest.extract import extract_lineage

CATALOG = Catalog.from_dict(
    {
        "tables": {
            "ods.u": {
                "columns": {"uid": "bigint", "email": "string", "app": "string"},
                "partitioned_by": [{"name": "dt", "type": "string"}],
                "format": "orc",
                "ttl_days": 30,
            },
            "ods.v": {
                "columns": ["uid", "app"],
                "view_sql": "SELECT uid, app FROM ods.u WHERE app = 'a'",
                "view_dialect": "hive",
            },
        }
    }
)


def dump(entry):
    return entry.model_dump()


def test_catalog_entries_give_back_the_catalog(backend_store):
    backend_store.upsert_catalog(CATALOG)
    entries = backend_store.catalog_entries(["ods.u", "nope.x", "ods.v", "ods.u"])
    assert sorted(entries) == ["ods.u", "ods.v"]
    assert dump(entries["ods.u"]) == dump(CATALOG.get("ods.u"))
    assert dump(entries["ods.v"]) == dump(CATALOG.get("ods.v"))
    # catalog order, not alphabetical; partition columns last
    assert entries["ods.u"].all_columns == ["uid", "email", "app", "dt"]
    assert backend_store.catalog_entries([]) == {}
    assert backend_store.catalog_entries(["nope.x"]) == {}


def test_a_load_without_catalog_knowledge_never_clobbers_it(backend_store):
    backend_store.upsert_catalog(CATALOG)
    task = SqlTask(task_id="t1", sql="INSERT OVERWRITE TABLE dw.x SELECT uid, app FROM ods.v")
    backend_store.upsert_tasks([(task, extract_lineage(task, CATALOG))], None)
    # an entry that knows nothing but the name
    backend_store.upsert_catalog(Catalog(tables={"ods.v": CatalogTable(name="ods.v")}))
    entries = backend_store.catalog_entries(["ods.u", "ods.v"])
    assert dump(entries["ods.u"]) == dump(CATALOG.get("ods.u"))
    assert dump(entries["ods.v"]) == dump(CATALOG.get("ods.v"))


def test_tables_known_from_lineage_only_list_their_columns_by_name(backend_store):
    task = SqlTask(task_id="t1", sql="INSERT OVERWRITE TABLE dw.x SELECT zeta, alpha FROM ods.raw")
    backend_store.upsert_tasks([(task, extract_lineage(task, Catalog()))], None)
    entries = backend_store.catalog_entries(["dw.x", "ods.raw"])
    assert entries["dw.x"].all_columns == ["alpha", "zeta"]
    # listed by name: `SELECT *` over them cannot be analysed (ingest.points)
    assert not entries["dw.x"].columns_ordered and not entries["ods.raw"].columns_ordered
    assert entries["dw.x"].partitioned_by == [] and entries["dw.x"].view_sql is None
    # the graph does not know the types: the catalog's default
    assert {c.type for c in entries["ods.raw"].columns} == {"string"}


def view_task(task_id: str, view: str, view_sql: str, dialect: str) -> tuple[SqlTask, TaskLineage]:
    task = SqlTask(task_id=task_id, sql=f"CREATE VIEW {view} AS {view_sql}", dialect=dialect)
    statement = StatementLineage(index=0, line=1, kind="create-view", writes=[view], view_sql=view_sql)
    return task, TaskLineage(task_id=task_id, dialect=dialect, statements=[statement], writes=[view])


def test_a_task_creating_a_view_stores_its_sql_and_dialect(backend_store):
    backend_store.upsert_catalog(CATALOG)
    backend_store.upsert_tasks([view_task("v1", "dw.v2", "SELECT uid FROM ods.u", "spark")])
    entry = backend_store.catalog_entries(["dw.v2"])["dw.v2"]
    assert (entry.view_sql, entry.view_dialect) == ("SELECT uid FROM ods.u", "spark")
    # a new version of the task redefines the view; a catalog entry for the view's columns only
    # (no SQL) keeps it
    backend_store.upsert_tasks([view_task("v1", "dw.v2", "SELECT email FROM ods.u", "hive")])
    backend_store.upsert_catalog(Catalog.from_dict({"tables": {"dw.v2": ["email"]}}))
    entry = backend_store.catalog_entries(["dw.v2"])["dw.v2"]
    assert (entry.view_sql, entry.view_dialect) == ("SELECT email FROM ods.u", "hive")
    assert entry.all_columns == ["email"]
    # a catalog's definition without a dialect replaces the SQL and drops the old dialect with it
    backend_store.upsert_catalog(
        Catalog.from_dict({"tables": {"dw.v2": {"columns": ["email"], "view_sql": "SELECT 1 AS email"}}})
    )
    entry = backend_store.catalog_entries(["dw.v2"])["dw.v2"]
    assert (entry.view_sql, entry.view_dialect) == ("SELECT 1 AS email", None)


def test_a_create_view_statement_without_sql_or_of_another_kind_stores_nothing(backend_store):
    task, lineage = view_task("v1", "dw.v3", "SELECT uid FROM ods.u", "spark")
    lineage.statements[0].kind = "create-table-as"
    backend_store.upsert_tasks([(task, lineage)])
    assert backend_store.catalog_entries(["dw.v3"])["dw.v3"].view_sql is None


def test_the_statements_are_neo4j_5_cypher():
    answers = lint(
        [
            {"query": queries.MERGE_TABLES, "params": ["rows"]},
            {"query": queries.CATALOG_ENTRIES, "params": ["ids"]},
        ]
    )
    assert [a["errors"] for a in answers] == [[], []]
