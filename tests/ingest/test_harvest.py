"""The Spark harvest job end to end: real PySpark (local mode) into a real FalkorDB."""

from __future__ import annotations

import json
import shutil

import pytest

from watershed.graph.catalog import Catalog
from watershed.ingest.generator import generate_warehouse
from watershed.ingest.harvest import run_harvest
from watershed.ingest.settings import IngestSettings


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    root = tmp_path_factory.mktemp("warehouse")
    summary = generate_warehouse(root, tasks=60, seed=3, broken=2)
    return root, summary


def harvest(spark, store, tasks_dir, out, **kwargs):
    catalog = Catalog.load(tasks_dir.parent / "catalog.json")
    return run_harvest(
        spark,
        tasks=str(tasks_dir),
        catalog=catalog,
        store=store,
        out_dir=out,
        progress=lambda _: None,
        **kwargs,
    )


def test_harvest_reharvest_change_and_delete(spark, graph_store, warehouse, tmp_path):
    root, _summary = warehouse
    tasks = tmp_path / "tasks"
    shutil.copytree(root / "tasks", tasks)
    shutil.copy(root / "catalog.json", tmp_path / "catalog.json")

    first = harvest(spark, graph_store, tasks, tmp_path / "out")
    assert first.tasks == 60 and first.loaded == 60 and first.tasks_with_errors == 2
    stats = graph_store.stats()
    assert stats.tasks == 60 and stats.column_edges > 500

    # A broken task lands in the error dataset with its id and message; the rest loaded.
    errors = [
        json.loads(line)
        for line in (tmp_path / "out" / first.run_id / "errors.jsonl").read_text().splitlines()
    ]
    assert len({e["task_id"] for e in errors}) == 2 and all(e["message"] for e in errors)
    run = json.loads((tmp_path / "out" / first.run_id / "run.json").read_text())
    assert run["tasks"] == 60 and run["loaded"] == 60

    # Re-harvesting the same corpus changes no count.
    again = harvest(spark, graph_store, tasks, tmp_path / "out")
    assert again.loaded == 0 and again.unchanged == 60
    assert graph_store.stats() == stats

    # Changing one task's SQL replaces exactly its edges.
    victim = sorted(tasks.rglob("dws_task_*.sql"))[0]
    task_id = victim.stem
    before_edges = graph_store.read(
        "MATCH ()-[r:FLOWS_TO]->(:Column) WHERE r.task = $t RETURN count(r)", {"t": task_id}
    )[0][0]
    others_before = stats.column_edges - before_edges
    header = "".join(line + "\n" for line in victim.read_text().splitlines() if line.startswith("--"))
    target = graph_store.read("MATCH (k:Task {id: $t})-[:WRITES]->(t:Table) RETURN t.id", {"t": task_id})[0][
        0
    ]
    source = graph_store.read(
        "MATCH (k:Task {id: $t})-[:READS]->(t:Table) RETURN t.id LIMIT 1", {"t": task_id}
    )[0][0]
    victim.write_text(
        header + f"INSERT OVERWRITE TABLE {target} SELECT uid, app FROM {source} WHERE dt = '${{date}}';\n"
    )
    changed = harvest(spark, graph_store, tasks, tmp_path / "out")
    assert changed.loaded == 1 and changed.unchanged == 59
    after = graph_store.stats()
    after_edges = graph_store.read(
        "MATCH ()-[r:FLOWS_TO]->(:Column) WHERE r.task = $t RETURN count(r)", {"t": task_id}
    )[0][0]
    assert after_edges == 2
    assert after.column_edges - after_edges == others_before

    # Deleting a task's file removes its edges on the next harvest.
    victim.unlink()
    pruned = harvest(spark, graph_store, tasks, tmp_path / "out")
    assert pruned.deleted == 1
    assert graph_store.read("MATCH ()-[r]->() WHERE r.task = $t RETURN count(r)", {"t": task_id})[0][0] == 0
    assert graph_store.stats().tasks == 59


def test_tasks_from_a_spark_table_with_the_spark_catalog(spark, graph_store, tmp_path):
    from watershed.ingest.harvest import catalog_from_spark

    spark.sql("CREATE DATABASE IF NOT EXISTS ods")
    spark.sql(
        "CREATE TABLE IF NOT EXISTS ods.visits (uid BIGINT, page STRING, dt STRING) USING parquet PARTITIONED BY (dt)"
    )
    tasks = spark.createDataFrame(
        [
            (
                "t_star",
                "1",
                "INSERT OVERWRITE TABLE dw.v SELECT * FROM ods.visits WHERE dt = '2024-01-31'",
                "spark",
                "a",
                "daily",
                "{}",
            ),
            ("t_bad", "1", "INSERT INTO dw.x SELECT FROM", "spark", "a", "daily", "{}"),
        ],
        ["task_id", "version", "sql", "dialect", "owner", "schedule", "vars"],
    )
    tasks.createOrReplaceTempView("task_export")
    catalog = catalog_from_spark(spark, ["ods"])
    assert catalog.get("ods.visits").partition_column_names == ["dt"]
    report = run_harvest(
        spark,
        tasks_table="task_export",
        catalog=catalog,
        store=graph_store,
        out_dir=tmp_path,
        progress=lambda _: None,
    )
    assert report.tasks == 2 and report.tasks_with_errors == 1 and report.loaded == 2
    sources = graph_store.read("MATCH (s:Column)-[:FLOWS_TO]->(t:Column {id: 'dw.v.page'}) RETURN s.id")
    assert sources == [["ods.visits.page"]]  # the star expanded from the Spark catalog
    window = graph_store.read(
        "MATCH (:Task {id: 't_star'})-[r:READS]->(:Table {id: 'ods.visits'}) RETURN r.partition_window"
    )
    assert window == [[1]]


def test_executors_extract_with_the_drivers_settings(spark, graph_store, tmp_path, monkeypatch):
    """Settings given to the harvest reach the executors (which, on a cluster, have neither the
    driver's environment nor its settings file): a session catalog named `cat2` is dropped."""
    monkeypatch.delenv("WATERSHED_DEFAULT_CATALOG", raising=False)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "t1.sql").write_text("insert into cat2.dw.t select a from cat2.ods.s;\n")
    run_harvest(
        spark,
        tasks=str(tasks),
        store=graph_store,
        out_dir=tmp_path / "out",
        progress=lambda _: None,
        settings=IngestSettings(default_catalog="cat2"),
    )
    tables = {row[0] for row in graph_store.read("MATCH (t:Table) RETURN t.id", {})}
    assert {"dw.t", "ods.s"} <= tables and not any(t.startswith("cat2:") for t in tables)
