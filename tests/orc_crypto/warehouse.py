"""The protection e2e warehouse (tests/orc_crypto/test_protect_e2e.py) as a nightly run's input: its
tables in a Spark catalog, its two tasks as a directory of .sql files, the catalog as the JSON file
the nightly harvest reads, and the protection the graph records for it, comparable across runs.

    python -m tests.orc_crypto.warehouse ROOT CONF_JSON

builds it in a Spark of its own whose conf is CONF_JSON (e.g. a Hive metastore in Derby that a
spark-submit job opens after this process has exited: Derby lets one JVM in at a time) and prints
the JSON of `NightlyInputs`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.orc_crypto.test_protect_e2e import TABLES, TASKS, build_warehouse, orc_files
from watershed.ingest.harvest import catalog_from_spark
from watershed.orc_crypto.protect import records


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
    """The graph's protection records of the warehouse under `root`, with paths relative to it and
    without what differs between two applies of the same plan (times, checksums, run ids)."""
    tables = {}
    for table in TABLES:
        record = records.table_protection(store, table)
        tables[table] = None if record is None else (record.columns, record.ddl)
    files = {
        str(Path(path).relative_to(root)): (record.table, record.columns)
        for path, record in records.files_of(store, list(TABLES)).items()
    }
    return {"tables": tables, "files": files}


def main(root: str, conf: str) -> None:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("watershed-test-warehouse")
    for name, value in json.loads(conf).items():
        builder = builder.config(name, value)
    spark = builder.config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        print(json.dumps(asdict(nightly_inputs(spark, Path(root)))), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
