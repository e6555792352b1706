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
