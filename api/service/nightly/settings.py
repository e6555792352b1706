"""Settings of the nightly chain (`WATERSHED_NIGHTLY_*`, or the settings file)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from watershed.graph.settings import AbsolutePath, GraphSettings, Seconds


class NightlySettings(GraphSettings):
    #: (WATERSHED_NIGHTLY_TASKS) the task corpus each night harvests: a directory of .sql files
    #: or a .jsonl/.parquet export (or give `nightly_tasks_table`)
    nightly_tasks: AbsolutePath | None = None
    #: a Spark/Hive table with the export's columns, instead of `nightly_tasks`
    nightly_tasks_table: str | None = None
    #: (WATERSHED_NIGHTLY_SOURCE) the source the night's tasks are loaded as and pruned within;
    #: default `files:<nightly_tasks>` or `table:<nightly_tasks_table>` (ingest/harvest.source_name)
    nightly_source: str | None = None
    #: the JSON schema catalog of the warehouse (none: the tasks' own CREATE statements only)
    nightly_catalog: AbsolutePath | None = None
    #: the KMS the protection steps use (kms://http@HOST:PORT/kms); default: the policy's
    nightly_kms: str | None = Field(default=None, pattern=r"^kms://")
    #: (WATERSHED_NIGHTLY_DISCOVERY) the discover step samples the tables whose files changed
    #: (WATERSHED_DISCOVERY_* settings); false: the step is skipped
    nightly_discovery: bool = True
    #: how long the propagate step waits for another run's lock before it fails (and is retried)
    nightly_lock_wait_seconds: Seconds = 60.0
    #: (the Celery beat option) when the nightly chain runs, as a cron line: minute hour day month weekday
    nightly_cron: str = "0 2 * * *"

    def ledger_dir(self) -> Path:
        """Where each logical date's step results are kept (DATA_DIR/nightly/DATE/STEP.json)."""
        return self.data_dir / "nightly"
