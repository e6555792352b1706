"""The harvest's catalog from Spark's metastore carries the tables' and columns' COMMENTs as their
descriptions and the owner TBLPROPERTIES name (`watershed.owner`: Spark reserves `owner`); loaded into the graph they are the catalog's
description and owner (propagation/metadata.py), and a second load changes nothing."""

from __future__ import annotations

from watershed.api.service.node_metadata import node_metadata
from watershed.ingest.harvest import catalog_from_spark


def test_comments_and_the_owner_property_become_the_catalogs_description_and_owner(spark, graph_store):
    spark.sql("CREATE DATABASE IF NOT EXISTS harvest_comments")
    spark.sql("DROP TABLE IF EXISTS harvest_comments.users")
    spark.sql(
        "CREATE TABLE harvest_comments.users (uid BIGINT COMMENT 'The user id', email STRING, "
        "dt STRING COMMENT 'Day of the snapshot') USING ORC PARTITIONED BY (dt) "
        "COMMENT 'Users, one row a day' TBLPROPERTIES ('watershed.owner' = 'crm-team', 'layer' = 'ods')"
    )
    try:
        catalog = catalog_from_spark(spark, ["harvest_comments"])
    finally:
        spark.sql("DROP TABLE IF EXISTS harvest_comments.users")
    table = catalog.get("harvest_comments.users")
    assert (table.owner, table.description) == ("crm-team", "Users, one row a day")
    assert [(c.name, c.description) for c in table.columns] == [("uid", "The user id"), ("email", None)]
    assert [(c.name, c.description) for c in table.partitioned_by] == [("dt", "Day of the snapshot")]

    for _ in range(2):
        graph_store.upsert_catalog(catalog)
        shown = node_metadata(graph_store, "harvest_comments.users")
        assert (shown.description.value, shown.description.source) == ("Users, one row a day", "catalog")
        assert (shown.owner.value, shown.owner.source) == ("crm-team", "catalog")
        uid = node_metadata(graph_store, "harvest_comments.users.uid")
        assert (uid.description.value, uid.owner.value, uid.owner.source) == (
            "The user id",
            "crm-team",
            "table",
        )
        assert node_metadata(graph_store, "harvest_comments.users.email").description.value is None
