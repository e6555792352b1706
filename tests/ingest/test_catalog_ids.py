"""Catalogs in table ids (issue 13 bug 3): the session's default catalog is a setting and a
parameter; a table of another catalog keeps it as `cat:db.table`, still two id parts, so the
readers of ids (node_label, the API's id parser) label it without knowing the catalogs."""

from __future__ import annotations

import pytest

from watershed.api.http.nodes import parse
from watershed.graph import ids
from watershed.graph.lineage import SqlTask
from watershed.graph.model import node_label
from watershed.ingest.extract import extract_lineage
from watershed.ingest.settings import IngestSettings

SQL = "INSERT INTO spark_catalog.db1.t3 SELECT a FROM iceberg.db2.t1"


def _tables(result) -> tuple[set[str], set[str]]:
    return {r.table for r in result.reads}, set(result.writes)


def test_spark_catalog_is_the_default_and_other_catalogs_stay() -> None:
    result = extract_lineage(SqlTask(task_id="t", sql=SQL, dialect="spark"))
    assert _tables(result) == ({"iceberg:db2.t1"}, {"db1.t3"})


def test_the_default_catalog_as_a_parameter() -> None:
    result = extract_lineage(SqlTask(task_id="t", sql=SQL, dialect="spark"), default_catalog="Iceberg")
    assert _tables(result) == ({"db2.t1"}, {"spark_catalog:db1.t3"})


def test_the_default_catalog_as_a_setting(monkeypatch) -> None:
    monkeypatch.setenv("WATERSHED_DEFAULT_CATALOG", "iceberg")
    settings = IngestSettings()
    assert settings.default_catalog == "iceberg"
    result = extract_lineage(SqlTask(task_id="t", sql=SQL, dialect="spark"), settings=settings)
    assert _tables(result) == ({"db2.t1"}, {"spark_catalog:db1.t3"})


def test_catalog_ids_keep_the_depth_their_label_comes_from() -> None:
    table = ids.join(ids.qualify("cat2", "db2"), "t1")
    column = ids.child(table, "a")
    assert (table, column) == ("cat2:db2.t1", "cat2:db2.t1.a")
    assert node_label(table) == "Table" and node_label(column) == "Column"
    assert ids.parent(column) == table and ids.name(column) == "a"
    assert parse("CAT2:db2.t1") == ("cat2:db2.t1", "Table", "cat2:db2")
    assert parse("cat2:db2.t1.a", want="Column") == ("cat2:db2.t1.a", "Column", "cat2:db2")


def test_a_database_with_a_dot_in_another_catalog_round_trips() -> None:
    result = extract_lineage(
        SqlTask(task_id="t", sql="INSERT INTO o SELECT a FROM cat2.`x.y`.t", dialect="spark")
    )
    (table,) = {r.table for r in result.reads}
    assert table == "`cat2:x.y`.t"
    assert ids.split(table) == ["cat2:x.y", "t"] and ids.canonical(table) == table
    assert node_label(table) == "Table"


def test_a_catalog_file_names_tables_the_way_the_extractor_does() -> None:
    from watershed.graph.catalog import Catalog, CatalogError

    catalog = Catalog.from_dict(
        {"tables": {"iceberg.db2.t1": ["a", "b"], "spark_catalog.db1.t0": ["z"], "ods.u": ["c"]}}
    )
    assert sorted(catalog.tables) == ["db1.t0", "iceberg:db2.t1", "ods.u"]
    # the catalog's columns resolve the extractor's unqualified reference in that table
    result = extract_lineage(
        SqlTask(task_id="t", sql="INSERT INTO db1.t3 SELECT a FROM iceberg.db2.t1", dialect="spark"), catalog
    )
    assert {(c.target, s.column) for c in result.columns for s in c.sources} == {
        ("db1.t3.a", "iceberg:db2.t1.a")
    }
    with pytest.raises(CatalogError, match=r"a\.b\.c\.d"):
        Catalog.from_dict({"tables": {"a.b.c.d": ["x"]}})
