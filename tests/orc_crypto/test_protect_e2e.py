"""Issue 14's acceptance, end to end: a warehouse Spark wrote (ORC, partitioned, in Spark's
catalog), its lineage from the SQL that built it, a steward's `pii=L4` on one source column,
propagation on the graph, the plan, the apply through Spark local mode and the KMS, then Spark
SQL reads plaintext with the key, masks without its ACL, and writes encrypted files by itself."""

from __future__ import annotations

import os

import yaml
from typer.testing import CliRunner

from tests.support.protected_warehouse import (
    CLEAN,
    DAYS,
    NULLIFY,
    ROWS,
    SOURCE,
    STATS,
    TABLES,
    TASKS,
    build_warehouse,
    clean_rows,
    held,
    orc_files,
    policy_data,
    source_rows,
    sql_rows,
)
from watershed.graph.catalog import Catalog
from watershed.graph.lineage import SqlTask
from watershed.graph.protection import ProtectionPlan
from watershed.ingest.extract import extract_lineage
from watershed.ingest.harvest import catalog_from_spark
from watershed.orc_crypto.keys.kms_client import KmsClient
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.plan import plan_protection
from watershed.orc_crypto.protect.spark_apply import apply_plan
from watershed.propagation.engine import local_batches, propagate_full
from watershed.propagation.graph_store import GraphTagStore
from watershed.propagation.policy import Policy


def load_graph(spark, store) -> Catalog:
    """Spark's catalog as the harvest reads it (columns, types, each table's location and
    format) and the two tasks' lineage, into the graph."""
    catalog = catalog_from_spark(spark, ["ods", "dw"])
    catalog.tables = {name: catalog.tables[name] for name in TABLES}
    store.upsert_catalog(catalog)
    items = []
    for task_id, sql in TASKS.items():
        task = SqlTask(task_id=task_id, sql=sql)
        lineage = extract_lineage(task, catalog)
        assert not lineage.errors, lineage.errors
        items.append((task, lineage))
    store.upsert_tasks(items, catalog)
    return catalog


def tag_and_propagate(store, policy: Policy) -> GraphTagStore:
    tags = GraphTagStore(store, policy)
    tags.set_tag(f"{SOURCE}.ssn", "pii", ["L4"], by="steward")
    tags.raise_fence(1)
    report = propagate_full(tags, local_batches(tags, policy, "e2e-1", 1), run_id="e2e-1", token=1)
    assert report.tags_changed > 0
    return tags


def plan_summary(plan: ProtectionPlan) -> dict[str, tuple]:
    return {
        t.table: (
            [(c.name, c.action, c.tag, c.want, c.why) for c in t.columns],
            [(f.path, f.partition, f.action, f.columns) for f in t.files],
            t.ddl,
            t.problems,
        )
        for t in plan.tables
    }


def test_tag_propagate_plan_apply_read_write_end_to_end(
    spark, kms_server, graph_store, falkordb_server, tmp_path, monkeypatch
):
    kms = kms_server.provider_path
    policy = Policy.from_data(policy_data(kms), source="<e2e policy>")
    locations = build_warehouse(spark, tmp_path / "warehouse")
    try:
        files = {table: orc_files(locations[table]) for table in TABLES}
        assert all(len(files[t]) >= 2 for t in TABLES), files
        stats_before = sql_rows(spark, STATS)
        assert [(r["n"], r["dt"]) for r in stats_before] == [(ROWS // 2, day) for day in DAYS]
        load_graph(spark, graph_store)
        tags = tag_and_propagate(graph_store, policy)
        found = tags.tags_of([f"{CLEAN}.ssn", f"{CLEAN}.email_lower", f"{STATS}.n", f"{STATS}.dt"])
        assert found[f"{CLEAN}.ssn"]["pii"].values == frozenset({"L4"})
        assert not any("pii" in found.get(node, {}) for node in (f"{STATS}.n", f"{STATS}.dt"))

        # the plan: the source and the copy, each with every file; not the count
        plan = plan_protection(graph_store, policy.protection, provider=KmsClient(kms))
        by_table = {t.table: t for t in plan.tables}
        assert sorted(by_table) == [CLEAN, SOURCE]
        why = {SOURCE: "manual", CLEAN: f"from {SOURCE}.ssn by task t_users_clean (direct)"}
        for table in (SOURCE, CLEAN):
            entry = by_table[table]
            assert [(c.name, c.action, c.tag, c.want, c.why) for c in entry.columns] == [
                ("ssn", "encrypt", "pii=L4", NULLIFY, why[table])
            ]
            assert [f.path for f in entry.files] == files[table]
            assert {f.partition for f in entry.files} == {f"dt={day}" for day in DAYS}
            assert all(f.action == "encrypt" and f.columns == {"ssn": NULLIFY} for f in entry.files)
            assert not entry.problems and len(entry.ddl) == 2
            assert "'orc.encrypt'='pii:ssn'" in entry.ddl[0] and kms in entry.ddl[0]

        # the CLI makes the same plan from the same graph (its settings from WATERSHED_* env)
        from watershed.api.cli import app as cli

        policy_file = tmp_path / "policy.yaml"
        policy_file.write_text(yaml.safe_dump(policy_data(kms)))
        monkeypatch.setenv("WATERSHED_FALKORDB_HOST", falkordb_server.host)
        monkeypatch.setenv("WATERSHED_FALKORDB_PORT", str(falkordb_server.port))
        monkeypatch.setenv("WATERSHED_GRAPH_NAME", graph_store.graph_name)
        result = CliRunner().invoke(
            cli, ["protect", "plan", "--format", "json", "--policy", str(policy_file), "--kms", kms]
        )
        assert result.exit_code == 0, result.output
        assert plan_summary(ProtectionPlan.model_validate_json(result.stdout)) == plan_summary(plan)

        # the apply through Spark: DDL by Spark SQL, files rewritten by executors
        run = apply_plan(plan, graph_store, spark=spark, kms=kms)
        planned = files[SOURCE] + files[CLEAN]
        assert run.status == "done" and not run.errors and not run.skipped, run
        assert (run.tables, run.files_done, run.files_unchanged) == (2, len(planned), 0)
        assert run.bytes_rewritten > 0
        assert records.run(graph_store, run.id) == run
        saved = records.files_of(graph_store, [SOURCE, CLEAN, STATS])
        assert sorted(saved) == sorted(planned)
        for table in (SOURCE, CLEAN):
            assert records.table_protection(graph_store, table).ddl == by_table[table].ddl
            assert orc_files(locations[table]) == files[table]  # swapped in place, nothing beside
            for path in files[table]:
                assert held(path) == {"ssn": ("pii", "nullify")}
        for path in files[STATS]:
            assert held(path) == {}
        assert not [p for p in tmp_path.rglob(".*.tmp") if p.is_file()]

        # Spark SQL with the key: plaintext; as a user without the key's ACL: ssn nullified
        expected = {SOURCE: source_rows(), CLEAN: clean_rows()}
        for table in (SOURCE, CLEAN):
            assert sql_rows(spark, table) == expected[table]
        kms_server.deny_decrypt("pii")
        try:
            masked = {table: sql_rows(spark, table) for table in (SOURCE, CLEAN)}
        finally:
            kms_server.reset_acl()
        for table in (SOURCE, CLEAN):
            assert masked[table] == [{**row, "ssn": None} for row in expected[table]]
        assert sql_rows(spark, STATS) == stats_before

        # the DDL worked: Spark's own INSERT into a protected table writes ssn encrypted
        spark.sql(f"INSERT INTO {CLEAN} VALUES (1000, '999000111', 'new@example.com', '2024-03-03')")
        new_files = [p for p in orc_files(locations[CLEAN]) if p not in files[CLEAN]]
        assert new_files and all("dt=2024-03-03" in p for p in new_files)
        for path in new_files:
            assert held(path) == {"ssn": ("pii", "nullify")}
        assert sql_rows(spark, CLEAN)[-1]["ssn"] == "999000111"

        # a second plan is empty: the new file's tail already holds what the policy asks, so
        # it needs no rewrite (and no record: the plan reads protection from tails)
        assert plan_protection(graph_store, policy.protection).tables == []

        # the first plan again does nothing: no file rewritten, no DDL re-run, bytes unchanged
        before = {p: os.stat(p).st_mtime_ns for p in planned}
        again = apply_plan(plan, graph_store, spark=spark, kms=kms)
        assert again.status == "done" and not again.errors and not again.skipped, again
        assert (again.files_done, again.files_unchanged, again.bytes_rewritten) == (0, len(planned), 0)
        assert {p: os.stat(p).st_mtime_ns for p in planned} == before
        for table in (SOURCE, CLEAN):
            assert records.table_protection(graph_store, table).run == run.id
        assert sorted(records.files_of(graph_store, [SOURCE, CLEAN])) == sorted(planned)
    finally:
        for table in TABLES:
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_the_harvest_catalog_from_spark_gives_location_and_format(spark, tmp_path):
    location = tmp_path / "located"
    spark.sql("CREATE DATABASE IF NOT EXISTS e2e_harvest")
    spark.sql("DROP TABLE IF EXISTS e2e_harvest.located")
    spark.sql(
        "CREATE TABLE e2e_harvest.located (id BIGINT, dt STRING) USING ORC PARTITIONED BY (dt) "
        f"LOCATION '{location}'"
    )
    try:
        table = catalog_from_spark(spark, ["e2e_harvest"]).get("e2e_harvest.located")
        assert table.partition_column_names == ["dt"]
        assert (table.location or "").removeprefix("file:") == str(location)
        assert table.format == "orc"
    finally:
        spark.sql("DROP TABLE IF EXISTS e2e_harvest.located")
