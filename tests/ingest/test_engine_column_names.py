"""Unaliased select items are named the way the engine names them (issue 13), so that a CTAS or
view column id matches the column of the table the engine really creates: Spark (and Databricks)
by the text of the analysed expression, checked here against a real Spark session; Hive `_c<n>`
by position in the select list as written (tests/ingest/lineage_cases/engine_column_names.yaml).
"""

from __future__ import annotations

import pytest
import sqlglot

from watershed.graph import ids
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.ingest.extract import extract_lineage
from watershed.ingest.statements import StatementExtractor

#: select items without an alias, as Spark users write them
EXPRESSIONS = [
    "upper(name)",
    "UPPER(name)",
    "a + 1",
    "s.a + 1",
    "a + b * 2",
    "(a + b) * 2",
    "a - b",
    "a / 2",
    "a % 2",
    "a div 2",
    "-a",
    "count(*)",
    "count(1)",
    "COUNT(DISTINCT a)",
    "sum(a)",
    "max(b)",
    "cast(a AS STRING)",
    "'lit'",
    "1",
    "1.5",
    "true",
    "null",
    "concat(name, 'x')",
    "name || 'y'",
    "a = 1",
    "a <> 1",
    "a > 1 AND b < 2",
    "a IN (1, 2)",
    "a BETWEEN 1 AND 2",
    "name LIKE 'x%'",
    "a IS NULL",
    "a IS NOT NULL",
    "NOT (a = 1)",
    "CASE WHEN a > 1 THEN 'x' ELSE 'y' END",
    "CASE a WHEN 1 THEN 'one' END",
    "if(a > 1, 'x', 'y')",
    "coalesce(a, b)",
    "substr(name, 1, 2)",
    "m['k']",
    "arr[0]",
    "st.f",
    "date_sub(dt, 1)",
    "date_add(dt, 2)",
    "get_json_object(name, '$.a')",
    "to_date(name)",
    "length(name)",
    "lower(trim(name))",
    "md5(name)",
    "abs(a)",
    "round(a, 2)",
    "row_number() OVER (PARTITION BY a ORDER BY b)",
    "rank() OVER (PARTITION BY a ORDER BY b DESC)",
    "max(a) OVER (PARTITION BY b)",
    "sum(a) OVER (PARTITION BY b ORDER BY a)",
]

#: functions sqlglot parses into another function's node: Spark keeps the name as written, which
#: only the statement's text still holds (not for all: `substring` keeps no position, so it is
#: named `substr`)
WRITTEN_NAMES = [
    "nvl(a, b)",
    "ifnull(a, b)",
    "ucase(name)",
    "len(name)",
    "char_length(name)",
    "sha(name)",
    "mean(a)",
    "std(a)",
    "cardinality(arr)",
    "pow(a, 2)",
    "dayofmonth(dt)",
    "size(arr)",
    "collect_list(a)",
    "any_value(a)",
    "greatest(a, b)",
    "ltrim(name)",
    "upper(nvl(name, 'x'))",
]

SOURCE = (
    "SELECT 1 AS a, 2 AS b, 'x' AS name, CAST('2024-01-01' AS DATE) AS dt, map('k', 'v') AS m,"
    " array(1, 2) AS arr, named_struct('f', 1) AS st"
)


def test_spark_names_unaliased_items_as_spark_does(spark) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW src AS {SOURCE}")
    mismatches = []
    for expression in EXPRESSIONS:
        engine = spark.sql(f"SELECT {expression} FROM src s").schema.names[0]
        sql = f"CREATE TABLE out.t AS SELECT {expression} FROM ods.src s"
        result = extract_lineage(SqlTask(task_id="names", sql=sql, dialect="spark"))
        assert result.errors == [], expression
        written = [ids.name(c.target) for c in result.columns]
        # column ids are lower case, like every id (Spark's names are case-insensitive)
        if written != [engine.lower()]:
            mismatches.append(f"{expression}: Spark {engine!r}, extractor {written}")
    assert not mismatches, "\n".join(mismatches)


def test_with_the_statement_text_functions_keep_their_written_names(spark) -> None:
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW src AS {SOURCE}")
    mismatches = []
    for expression in WRITTEN_NAMES:
        engine = spark.sql(f"SELECT {expression} FROM src s").schema.names[0]
        sql = f"CREATE TABLE out.t AS SELECT {expression} FROM ods.src s"
        extractor = StatementExtractor(Catalog(), "default", frozenset(), frozenset(), "spark", None)
        # what extract_lineage would hand the resolver for the statement it parses
        extractor.env.sql_text = sql
        statement = extractor.extract(sqlglot.parse_one(sql, read="spark"), 0, 1)
        written = [ids.name(c.target) for c in statement.columns]
        if written != [engine.lower()]:
            mismatches.append(f"{expression}: Spark {engine!r}, extractor {written}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("dialect", ["spark", "databricks"])
def test_a_view_column_takes_the_spark_name(dialect: str) -> None:
    sql = "CREATE VIEW dw.v AS SELECT upper(name), a + 1, count(*) FROM ods.src GROUP BY name, a"
    result = extract_lineage(SqlTask(task_id="names", sql=sql, dialect=dialect))
    assert [c.target for c in result.columns] == ["dw.v.upper(name)", "dw.v.(a + 1)", "dw.v.count(1)"]


def test_a_sum_too_long_to_name_by_its_text_keeps_a_position_name() -> None:
    expression = " + ".join(f"c{i}" for i in range(500))
    sql = f"CREATE TABLE out.t AS SELECT {expression} FROM ods.src"
    result = extract_lineage(SqlTask(task_id="names", sql=sql, dialect="spark"))
    assert result.errors == []
    assert [c.target for c in result.columns] == ["out.t._c0"]
    assert len(result.columns[0].sources) == 500


def test_a_name_is_not_borrowed_from_another_text() -> None:
    from watershed.ingest.functions import spark_column_name

    node = sqlglot.parse_one("SELECT nvl(a, b) FROM t", read="spark").expressions[0]
    assert spark_column_name(node, "SELECT nvl(a, b) FROM t") == "nvl(a, b)"
    # a node of an earlier batch (a temporary view's definition) met with this batch's text
    assert spark_column_name(node, "SELECT x + 1, y FROM t") == "coalesce(a, b)"
    assert spark_column_name(node) == "coalesce(a, b)"
