"""Knobs of the lineage extractor and the harvest job."""

from __future__ import annotations

from pydantic import Field

from watershed.graph.catalog import DEFAULT_CATALOG
from watershed.graph.settings import WatershedSettings


class IngestSettings(WatershedSettings):
    #: database of unqualified table names until a script says `USE db`
    default_database: str = "default"
    #: the session's catalog (WATERSHED_DEFAULT_CATALOG): `spark_catalog.db.t` reads as `db.t`,
    #: a table of any other catalog keeps it, `cat2.db2.t` reads as `cat2:db2.t`
    default_catalog: str = DEFAULT_CATALOG
    #: (WATERSHED_CONDITIONS_AS_LINEAGE) also count the columns that decide a value as its
    #: sources: CASE/IF conditions with kind `conditional-value`, window PARTITION BY/ORDER BY
    #: columns with kind `window`. Off: they are only weak references (`condition`, `group`, `order`)
    conditions_as_lineage: bool = False
    #: partition column names assumed when the catalog does not say
    partition_columns: list[str] = Field(default_factory=lambda: ["dt", "ds", "date", "p_date", "hour"])
    #: task variables that hold the run date, first match wins; reads reach back from it
    run_date_variables: list[str] = Field(
        default_factory=lambda: ["date", "run_date", "bizdate", "biz_date", "ds", "dt"]
    )
    #: (WATERSHED_RUN_DATE) the run date (YYYY-MM-DD) of a task whose vars set none of
    #: `run_date_variables`: the nightly run's logical date, so `${date}` in a task without vars
    #: reads as that night's date. A task's own run-date variable always wins
    run_date: str | None = Field(default=None, pattern=r"^\d{4}-\d{2}-\d{2}$")
    #: the largest share of the graph's tasks one harvest may prune (remove because the corpus
    #: lacks them) without `--prune-force`; an empty corpus never prunes without it
    prune_max_fraction: float = Field(default=0.5, ge=0.0, le=1.0)
    #: (WATERSHED_OPENLINEAGE_NAMESPACES) how an OpenLineage dataset's namespace reads, first match
    #: wins: [pattern (fnmatch), target]; target `table` (name `[catalog.]db.table`), `table:<catalog>`,
    #: `path` (files named by the namespace's URI and the name), `path:fs` (files of the cluster's
    #: default file system). An unmatched namespace is kept as is (docs/openlineage.md, "Names")
    openlineage_namespaces: list[tuple[str, str]] = Field(
        default_factory=lambda: [
            ("hive://*", "table"),
            ("spark_catalog", "table"),
            ("file", "path:fs"),
            ("hdfs://*", "path"),
            ("s3://*", "path"),
            ("s3a://*", "path"),
            ("gs://*", "path"),
            ("abfss://*", "path"),
            ("wasbs://*", "path"),
        ]
    )
    #: (WATERSHED_OPENLINEAGE_TABLE_NAMESPACE) the namespace Watershed's tables are emitted under
    openlineage_table_namespace: str = "spark_catalog"
    #: (WATERSHED_OPENLINEAGE_DIALECT) the dialect of an event's SQL whose facet names none and whose
    #: processing engine is not Spark
    openlineage_dialect: str = "hive"
    #: (WATERSHED_OPENLINEAGE_MAX_BODY_BYTES) the largest POST /api/v1/lineage body, after gzip is
    #: undone; the API's own limit (WATERSHED_API_MAX_BODY_BYTES) bounds what is sent
    openlineage_max_body_bytes: int = Field(default=1024 * 1024, ge=1)
    #: The harvest driver's memory is bounded by the next three settings and the batch of tasks it
    #: loads at once, not by the warehouse (docs/operations.md, "Harvest memory";
    #: bench/harvest_memory_bench.py measures it).
    #: (WATERSHED_HARVEST_PARTITION_TASKS) the most tasks of a file corpus in one Spark partition:
    #: the driver streams the executors' rows a partition at a time and fetches the next one
    #: meanwhile, so it holds two partitions' rows (a few kilobytes a task) at most
    harvest_partition_tasks: int = Field(default=2000, ge=1)
    #: (WATERSHED_HARVEST_CATALOG_TABLES) catalog tables written to the graph per step before the
    #: tasks load: the rows of one step are what the driver holds for it
    harvest_catalog_tables: int = Field(default=2000, ge=1)
    #: (WATERSHED_HARVEST_KNOWN_COLUMNS) how many column ids the driver remembers as being in the
    #: graph already (their nodes are not sent again); past it the memory is dropped and the next
    #: loads ask the graph, which keeps about 100 bytes a column from growing with the warehouse
    harvest_known_columns: int = Field(default=200_000, ge=0)
    #: the Spark master of `watershed harvest` and of the harvest job (WATERSHED_SPARK_MASTER);
    #: unset, a job launched by spark-submit keeps the master spark-submit gave it, and anything
    #: else runs on local[*]
    spark_master: str | None = None
