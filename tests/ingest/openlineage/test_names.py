"""OpenLineage dataset names ↔ Watershed ids: the documented rules, both ways."""

from __future__ import annotations

import pytest

from watershed.ingest.openlineage.names import DatasetNameError, Names
from watershed.ingest.settings import IngestSettings


@pytest.mark.parametrize(
    ("namespace", "name", "expected"),
    [
        ("hive://metastore:9083", "ODS.User_Log", "ods.user_log"),
        ("hive://metastore:9083", "user_log", "default.user_log"),
        ("spark_catalog", "spark_catalog.dw.t", "dw.t"),
        ("spark_catalog", "iceberg.dw.t", "iceberg:dw.t"),
        ("file", "/tmp/out/", "path:fs./tmp/out"),
        ("hdfs://nn:8020", "/data/x", "path:fs.hdfs://nn:8020/data/x"),
        ("s3://bucket", "warehouse/x.parquet", "path:fs.`s3://bucket/warehouse/x.parquet`"),
        (
            "postgres://db.example:5432",
            "shop.public.orders",
            "`openlineage:postgres://db.example:5432`.`shop.public.orders`",
        ),
    ],
)
def test_a_dataset_reads_as_the_id_the_extractor_gives_and_back(namespace, name, expected):
    names = Names(IngestSettings())
    assert names.table_id(namespace, name) == expected
    back = names.table_id(*names.to_openlineage(expected))
    assert back == expected


def test_a_path_read_by_sql_and_by_an_event_is_one_node():
    from watershed.graph.lineage import SqlTask
    from watershed.ingest.extract import extract_lineage

    task = SqlTask(
        task_id="t", sql="INSERT OVERWRITE DIRECTORY '/data/out' SELECT a FROM ods.x", dialect="hive"
    )
    assert extract_lineage(task).writes == [Names(IngestSettings()).table_id("file", "/data/out")]


def test_rules_are_ordered_and_a_catalog_target_names_it():
    settings = IngestSettings(
        openlineage_namespaces=[["hdfs://nn:8020", "path:fs"], ["hdfs://*", "path"], ["glue", "table:lake"]]
    )
    names = Names(settings)
    assert names.table_id("hdfs://nn:8020", "/d") == "path:fs./d"
    assert names.table_id("hdfs://other", "/d") == "path:fs.hdfs://other/d"
    assert names.table_id("glue", "db.t") == "lake:db.t"
    assert names.to_openlineage("path:fs./d") == ("hdfs://nn:8020", "/d")


@pytest.mark.parametrize(
    ("namespace", "name", "message"),
    [("hive://h", "a..b", "empty part"), ("hive://h", "a.b.c.d", "4 parts"), ("hive://h", " ", "empty name")],
)
def test_a_name_the_rule_cannot_read_is_an_error_naming_it(namespace, name, message):
    with pytest.raises(DatasetNameError, match=message):
        Names(IngestSettings()).table_id(namespace, name)


def test_a_bad_rule_target_is_an_error_naming_its_position():
    with pytest.raises(DatasetNameError, match=r"openlineage_namespaces\[0\].*'tables'"):
        Names(IngestSettings(openlineage_namespaces=[["x", "tables"]]))
