"""Spark's `INSERT OVERWRITE DIRECTORY … USING fmt` (ingest/paths.py): sqlglot 30.30 does not parse
it, so `StatementExtractor.reparse` offers the Hive form it parses (extract.py calls it on a parse
error). The SQL is the Spark SQL reference's example
(spark.apache.org/docs/latest/sql-ref-syntax-dml-insert-overwrite-directory.html)."""

from __future__ import annotations

import pytest

from watershed.graph.catalog import Catalog
from watershed.ingest.paths import rewrite_directory_using
from watershed.ingest.statements import StatementExtractor

WITH_PATH = """INSERT OVERWRITE DIRECTORY '/tmp/destination'
    USING parquet
    OPTIONS (col1 1, col2 2, col3 'test')
    SELECT * FROM test_table"""
PATH_IN_OPTIONS = """INSERT OVERWRITE DIRECTORY
    USING parquet
    OPTIONS ('path' '/tmp/destination', col1 1, col2 2, col3 'test')
    SELECT * FROM test_table"""


@pytest.mark.parametrize("sql", [WITH_PATH, PATH_IN_OPTIONS])
def test_directory_using_becomes_a_path_write(sql: str) -> None:
    assert (
        rewrite_directory_using(sql)
        == "INSERT OVERWRITE DIRECTORY '/tmp/destination' SELECT * FROM test_table"
    )
    catalog = Catalog.from_dict({"tables": {"default.test_table": {"columns": ["a", "b"]}}})
    extractor = StatementExtractor(catalog, "default", frozenset(), frozenset(), "spark", None)
    node = extractor.reparse(sql)
    assert node is not None
    result = extractor.extract(node, 0, 1)
    assert result.writes == ["path:fs./tmp/destination"]
    assert {c.target: [s.id for s in c.sources] for c in result.columns} == {
        "path:fs./tmp/destination.a": ["default.test_table.a"],
        "path:fs./tmp/destination.b": ["default.test_table.b"],
    }


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "INSERT OVERWRITE DIRECTORY USING parquet SELECT 1",  # no path anywhere
        "INSERT OVERWRITE DIRECTORY '/p' USING parquet OPTIONS ('path' '/q' SELECT 1",  # unclosed
    ],
)
def test_other_text_is_not_rewritten(sql: str) -> None:
    assert rewrite_directory_using(sql) is None


def _run_script(statements: list[str], catalog: Catalog | None = None) -> list:
    """Each statement as extract.py runs it, its parse-error path calling `reparse`."""
    import sqlglot
    from sqlglot.errors import ParseError

    extractor = StatementExtractor(catalog or Catalog(), "default", frozenset(), frozenset(), "hive", None)
    results = []
    for index, text in enumerate(statements):
        try:
            node = sqlglot.parse_one(text, read="hive")
        except ParseError:
            node = extractor.reparse(text)
            if node is None:
                continue
        results.append(extractor.extract(node, index, index + 1))
    return results


def test_hive_export_then_import_round_trip() -> None:
    # from: apache/hive/ql/src/test/queries/clientpositive/exim_01_nonpart.q (its lineage statements;
    # the dfs/describe/show lines left out): a table loaded, exported, dropped, imported elsewhere
    results = _run_script(
        [
            'create table exim_department ( dep_id int comment "department id") stored as textfile '
            'tblproperties("creator"="krishna")',
            'load data local inpath "../../data/files/test.dat" into table exim_department',
            "export table exim_department to 'ql/test/data/exports/exim_department'",
            "drop table exim_department",
            "create database importer",
            "use importer",
            "import from 'ql/test/data/exports/exim_department'",
            "select * from exim_department",
            "drop table exim_department",
        ]
    )
    by_kind = {r.kind: r for r in results if r.kind in ("unload", "load")}
    export, imported = by_kind["unload"], by_kind["load"]
    files = "path:fs.ql/test/data/exports/exim_department"
    # the loaded table was dropped after the export: the export comes from the loaded files
    assert export.writes == [files]
    assert {c.target: [s.id for s in c.sources] for c in export.columns} == {
        f"{files}.dep_id": ["path:local.`../../data/files/test.dat`.dep_id"]
    }
    # the import restores the exported table, named by the export, into the current database; that
    # table is dropped in turn, so the import writes nothing the task keeps, but still reads the files
    assert [r.table for r in imported.reads] == [files]
    assert imported.writes == []


def test_export_partition_is_a_filter_and_import_names_its_table() -> None:
    # from: Hive's Import/Export docs (cwiki.apache.org/confluence/display/Hive/LanguageManual+ImportExport),
    # "Export/import a partition", with the employee table's schema
    catalog = Catalog.from_dict(
        {
            "tables": {
                "default.employee": {"columns": ["name"], "partitioned_by": ["emp_country", "emp_state"]}
            }
        }
    )
    results = _run_script(
        [
            'export table employee partition (emp_country="in", emp_state="ka") to \'hdfs_exports_location/employee\'',
            'import table employee partition (emp_country="us", emp_state="tn") from \'hdfs_exports_location/employee\'',
        ],
        catalog,
    )
    export, imported = results
    files = "path:fs.hdfs_exports_location/employee"
    assert export.writes == [files]
    assert {(w.column, w.role) for w in export.weak_references} == {
        ("default.employee.emp_country", "filter"),
        ("default.employee.emp_state", "filter"),
    }
    assert {p.text for r in export.reads for p in r.predicates} == {"emp_country = 'in'", "emp_state = 'ka'"}
    assert imported.writes == ["default.employee"]
    assert {c.target: [s.id for s in c.sources] for c in imported.columns} == {
        "default.employee.name": [f"{files}.name"],
        "default.employee.emp_country": [],
        "default.employee.emp_state": [],
    }


def test_import_of_files_from_elsewhere_without_a_table_is_an_error() -> None:
    from watershed.ingest.errors import StatementError

    extractor = StatementExtractor(Catalog(), "default", frozenset(), frozenset(), "hive", None)
    node = extractor.reparse("import from 'hdfs_exports_location/department'")
    with pytest.raises(StatementError, match="named by the export's metadata"):
        extractor.extract(node, 0, 1)
