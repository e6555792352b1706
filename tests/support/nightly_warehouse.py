"""The protection e2e warehouse (tests/support/protected_warehouse.py) as a nightly run's input: its
tables in a Spark catalog, its two tasks as a directory of .sql files, the catalog as the JSON file
the nightly harvest reads, and the protection the graph records for it, comparable across runs.

    python -m tests.support.nightly_warehouse CONF_JSON INPUTS_JSON

registers a warehouse already built (`nightly_inputs`: the files stay when the building session
drops its tables, they are external) in the catalog of a Spark of its own whose conf is CONF_JSON,
e.g. a Hive metastore in Derby that a spark-submit job opens after this process has exited (Derby
lets one JVM in at a time). Writing the files in the test's own warm Spark and only registering
them here keeps that second JVM short.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.protected_warehouse import SCHEMAS, TABLES, TASKS, build_warehouse, orc_files
from watershed.graph.protection import ColumnKey
from watershed.ingest.harvest import catalog_from_spark
from watershed.orc_crypto.protect import records
from watershed.orc_crypto.protect.ddl import alter_table_ddl

SOURCE, CLEAN, STATS = TABLES
#: the columns the built-in policy's seeds (`*ssn*` L4, `*email*` L3) make sensitive, each
#: encrypted with key `pii` and masked `nullify` by its protection rules, in table order
PROTECTED = {SOURCE: ("ssn", "email"), CLEAN: ("ssn", "email_lower"), STATS: ()}


@dataclass
class NightlyInputs:
    root: str
    #: table -> its location
    locations: dict[str, str]
    #: WATERSHED_NIGHTLY_TASKS and WATERSHED_NIGHTLY_CATALOG
    tasks: str
    catalog: str

    def files(self, table: str) -> list[str]:
        return orc_files(Path(self.locations[table]))


def nightly_inputs(spark, root: Path) -> NightlyInputs:
    """The warehouse built by `spark` under root/warehouse; its tasks and catalog files under root."""
    locations = build_warehouse(spark, root / "warehouse")
    tasks = root / "tasks"
    tasks.mkdir(parents=True, exist_ok=True)
    for task_id, sql in TASKS.items():
        (tasks / f"{task_id}.sql").write_text(sql + "\n")
    catalog = catalog_from_spark(spark, ["ods", "dw"])
    catalog.tables = {name: catalog.tables[name] for name in TABLES}
    catalog_file = root / "catalog.json"
    catalog_file.write_text(catalog.model_dump_json(indent=1))
    return NightlyInputs(
        root=str(root),
        locations={table: str(location) for table, location in locations.items()},
        tasks=str(tasks),
        catalog=str(catalog_file),
    )


def protection_records(store, root: str) -> dict:
    """The graph's protection records of the warehouse under `root`: each table's columns (key,
    mask) and DDL, each file's table and columns by its path under root; without what differs
    between two applies of the same plan (times, checksums, run ids, key versions)."""

    def keys(columns) -> dict[str, tuple[str, str]]:
        return {name: (key.key, key.mask) for name, key in columns.items()}

    tables = {}
    for table in TABLES:
        record = records.table_protection(store, table)
        tables[table] = None if record is None else (keys(record.columns), record.ddl)
    files = {
        str(Path(path).relative_to(root)): (record.table, keys(record.columns))
        for path, record in records.files_of(store, list(TABLES)).items()
    }
    return {"tables": tables, "files": files}


def expected_protection(inputs: NightlyInputs, kms: str) -> dict:
    """`protection_records` after a night that applied the built-in policy with `kms`: every file
    of the two tables PROTECTED names encrypted, their options set; the count's table untouched."""
    wanted = {
        table: dict.fromkeys(PROTECTED[table], ColumnKey(key="pii", mask="nullify")) for table in TABLES
    }
    tables = {
        table: (
            {name: ("pii", "nullify") for name in wanted[table]},
            alter_table_ddl(table, wanted[table], kms),
        )
        if wanted[table]
        else None
        for table in TABLES
    }
    files = {
        str(Path(path).relative_to(inputs.root)): (
            table,
            {name: ("pii", "nullify") for name in wanted[table]},
        )
        for table in TABLES
        if wanted[table]
        for path in inputs.files(table)
    }
    return {"tables": tables, "files": files}


def register(spark, inputs: NightlyInputs) -> None:
    """The warehouse's databases and tables (with their partitions) in `spark`'s catalog."""
    for database in ("ods", "dw"):
        spark.sql(
            f"CREATE DATABASE IF NOT EXISTS {database} LOCATION '{Path(inputs.root, 'warehouse', database)}'"
        )
    for table in TABLES:
        spark.sql(
            f"CREATE TABLE {table} ({SCHEMAS[table]}) USING ORC PARTITIONED BY (dt) "
            f"LOCATION '{inputs.locations[table]}'"
        )
        spark.sql(f"ALTER TABLE {table} RECOVER PARTITIONS")


def main(conf: str, inputs: str) -> None:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("watershed-test-warehouse")
    for name, value in json.loads(conf).items():
        builder = builder.config(name, value)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        register(spark, NightlyInputs(**json.loads(inputs)))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
