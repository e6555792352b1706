"""The Spark harvest job: extract every task's lineage in the executors, load it into the graph.

    spark-submit ingest/harvest.py --tasks TASKS [--catalog catalog.json] [--out DIR] [--graph falkordb|none]
    watershed harvest --tasks TASKS ...

TASKS is a directory of .sql files, a .jsonl/.parquet export, or (with
`--tasks-table`) a Spark/Hive table with the export's columns. The catalog is
broadcast; extraction runs in `mapPartitions` and returns one JSON row per
task. The driver streams the rows back (`toLocalIterator`), loads them into
the graph in batches, and writes next to the run's output `errors.jsonl`
(task id, statement index, message: bad SQL never stops the harvest) and
`run.json` (run id, inputs, counts, duration). On a cluster, ship the
packages with `--py-files watershed.zip` or install the wheel on the nodes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ingest.catalog import Catalog
from ingest.model import LineageError, SqlTask, TaskLineage
from ingest.sources import SourceProblem, read_tasks


def _extract_partition(rows: Iterator, catalog_broadcast) -> Iterator[str]:
    """Runs in an executor: one JSON line per task, never an exception for a bad task."""
    from ingest.extract import extract_lineage

    data = catalog_broadcast.value if catalog_broadcast is not None else None
    catalog = Catalog.from_dict(data) if data else Catalog()
    for row in rows:
        record = row.asDict() if hasattr(row, "asDict") else dict(row)
        task_id = str(record.get("task_id") or "")
        try:
            from ingest.sources import task_from_record

            task = task_from_record(record)
            lineage = extract_lineage(task, catalog)
        except Exception as exc:
            lineage = TaskLineage(
                task_id=task_id or "<unknown>",
                dialect=str(record.get("dialect") or "hive"),
                errors=[
                    LineageError(
                        task_id=task_id or "<unknown>",
                        statement_index=0,
                        message=f"{type(exc).__name__}: {exc}",
                    )
                ],
            )
            task = None
        yield json.dumps(
            {
                "task": task.model_dump() if task is not None else record,
                "lineage": json.loads(lineage.model_dump_json()),
            }
        )


@dataclass
class HarvestReport:
    run_id: str
    inputs: list[str]
    tasks: int = 0
    tasks_with_errors: int = 0
    statement_errors: int = 0
    source_problems: list[SourceProblem] = field(default_factory=list)
    loaded: int = 0
    unchanged: int = 0
    deleted: int = 0
    extract_seconds: float = 0.0
    load_seconds: float = 0.0
    seconds: float = 0.0
    out_dir: str = ""


def _records(tasks: str, problems: list[SourceProblem]) -> list[dict]:
    return [task.model_dump() for task in read_tasks(tasks, problems)]


def run_harvest(
    spark,
    *,
    tasks: str | None = None,
    tasks_table: str | None = None,
    catalog: Catalog | None = None,
    store=None,
    out_dir: str | Path = "var/harvest",
    batch_size: int = 1000,
    prune: bool = True,
    progress: Callable[[str], None] = print,
) -> HarvestReport:
    """Harvest a task corpus; with `prune`, tasks the graph has but the corpus lacks are deleted."""
    began = time.monotonic()
    run_id = f"harvest-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    report = HarvestReport(run_id=run_id, inputs=[tasks or f"table:{tasks_table}"])
    out = Path(out_dir) / run_id
    out.mkdir(parents=True, exist_ok=True)
    report.out_dir = str(out)

    if tasks_table:
        frame = spark.table(tasks_table)
        rdd = frame.rdd
    else:
        records = _records(tasks, report.source_problems)
        slices = max(1, min(len(records) // 50 + 1, spark.sparkContext.defaultParallelism * 4))
        rdd = spark.sparkContext.parallelize(records, slices)
    catalog_data = catalog.model_dump(mode="json") if catalog is not None and catalog.tables else None
    broadcast = spark.sparkContext.broadcast(catalog_data)
    lines = rdd.mapPartitions(lambda rows: _extract_partition(rows, broadcast))

    if store is not None and catalog is not None and catalog.tables:
        # With the catalog's nodes in place, task loads only match ids and create edges.
        began_catalog = time.monotonic()
        store.upsert_catalog(catalog)
        report.load_seconds += time.monotonic() - began_catalog
    extract_began = time.monotonic()
    # Extract every partition in parallel first; the driver then streams the cached rows.
    lines = lines.persist()
    lines.count()
    report.extract_seconds = time.monotonic() - extract_began
    pending: list[tuple[SqlTask, TaskLineage]] = []
    seen: set[str] = set()
    with (out / "errors.jsonl").open("w") as errors:
        for problem in report.source_problems:
            errors.write(
                json.dumps(
                    {
                        "task_id": None,
                        "statement_index": None,
                        "source": problem.location,
                        "message": problem.message,
                    }
                )
                + "\n"
            )
        for line in lines.toLocalIterator(prefetchPartitions=True):
            item = json.loads(line)
            lineage = TaskLineage.model_validate(item["lineage"])
            report.tasks += 1
            if lineage.errors:
                report.tasks_with_errors += 1
                report.statement_errors += len(lineage.errors)
                for error in lineage.errors:
                    errors.write(json.dumps(error.model_dump()) + "\n")
            try:
                task = SqlTask.model_validate(item["task"])
            except ValueError:
                continue
            seen.add(task.task_id)
            pending.append((task, lineage))
            if store is not None and len(pending) >= batch_size:
                _load(store, pending, catalog, report, progress)
                pending = []
        if store is not None and pending:
            _load(store, pending, catalog, report, progress)
    lines.unpersist()
    if store is not None and prune and not report.source_problems:
        gone = sorted(set(store.task_ids()) - seen)
        if gone:
            store.delete_tasks(gone)
            report.deleted = len(gone)
            progress(f"  {len(gone)} tasks no longer in the corpus: their lineage was removed")
    report.seconds = time.monotonic() - began
    (out / "run.json").write_text(
        json.dumps(
            {
                "run_id": run_id,
                "inputs": report.inputs,
                "tasks": report.tasks,
                "tasks_with_errors": report.tasks_with_errors,
                "statement_errors": report.statement_errors,
                "source_problems": len(report.source_problems),
                "loaded": report.loaded,
                "unchanged": report.unchanged,
                "deleted": report.deleted,
                "extract_seconds": round(report.extract_seconds, 3),
                "load_seconds": round(report.load_seconds, 3),
                "seconds": round(report.seconds, 3),
            },
            indent=2,
        )
    )
    if store is not None:
        from graph.model import HarvestRun

        store.record_run(
            HarvestRun(
                id=run_id,
                started_at=datetime.now(UTC).isoformat(),
                inputs=report.inputs,
                tasks=report.tasks,
                errors=report.tasks_with_errors,
                loaded=report.loaded,
                unchanged=report.unchanged,
                seconds=report.seconds,
            )
        )
    return report


def _load(store, pending, catalog, report: HarvestReport, progress) -> None:
    began = time.monotonic()
    result = store.upsert_tasks(pending, catalog)
    report.loaded += result.loaded
    report.unchanged += result.unchanged
    report.load_seconds += time.monotonic() - began
    progress(
        f"  {report.tasks} tasks extracted, {report.loaded} loaded, {report.unchanged} unchanged, "
        f"{report.tasks_with_errors} with errors"
    )


def catalog_from_spark(spark, databases: list[str] | None = None) -> Catalog:
    """The Spark session's catalog (the Hive metastore when Spark runs with Hive support) as a Catalog."""
    from ingest.catalog import CatalogColumn, CatalogTable

    tables: dict[str, CatalogTable] = {}
    names = databases or [db.name for db in spark.catalog.listDatabases()]
    for database in names:
        for table in spark.catalog.listTables(database):
            if table.isTemporary:
                continue
            table_id = f"{database}.{table.name}".lower()
            columns = spark.catalog.listColumns(f"{database}.{table.name}")
            tables[table_id] = CatalogTable(
                name=table_id,
                columns=[CatalogColumn(name=c.name, type=c.dataType) for c in columns if not c.isPartition],
                partitioned_by=[
                    CatalogColumn(name=c.name, type=c.dataType) for c in columns if c.isPartition
                ],
            )
    return Catalog(tables=tables)


def spark_session(master: str = "local[*]", app_name: str = "watershed-harvest"):
    import os

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        # Executors run this interpreter, so they import the same installed packages.
        .config("spark.pyspark.python", sys.executable)
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", help="directory of .sql files, or a .jsonl/.parquet task export")
    parser.add_argument("--tasks-table", help="a Spark/Hive table with the export's columns")
    parser.add_argument("--catalog", help="JSON catalog file")
    parser.add_argument(
        "--spark-catalog", action="store_true", help="take the schemas from the Spark/Hive catalog"
    )
    parser.add_argument("--out", default="var/harvest", help="where the run's errors.jsonl and run.json go")
    parser.add_argument("--graph", choices=["falkordb", "none"], default="falkordb")
    parser.add_argument(
        "--master", default=None, help="Spark master (default local[*]; spark-submit sets its own)"
    )
    args = parser.parse_args(argv)
    if not args.tasks and not args.tasks_table:
        parser.error("give --tasks or --tasks-table")
    store = None
    if args.graph == "falkordb":
        from graph.falkordb_store import FalkorDBStore

        store = FalkorDBStore.from_settings()
        store.ensure_schema()
    spark = spark_session(args.master or "local[*]")
    catalog = (
        Catalog.load(args.catalog)
        if args.catalog
        else catalog_from_spark(spark)
        if args.spark_catalog
        else None
    )
    report = run_harvest(
        spark, tasks=args.tasks, tasks_table=args.tasks_table, catalog=catalog, store=store, out_dir=args.out
    )
    print(json.dumps({k: v for k, v in report.__dict__.items() if k != "source_problems"}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
