"""`watershed harvest` and `watershed generate`: fill the lineage graph from SQL tasks."""

from __future__ import annotations

from pathlib import Path

import typer

from watershed.api.cli.output import console, fail, usage_error


def harvest_command(
    tasks: Path | None = typer.Option(
        None,
        "--tasks",
        "-t",
        help="Directory of .sql files, or a .jsonl/.parquet task export.",
        readable=False,  # checked here: an unreadable input is a failure (exit 1), not a usage error
    ),
    tasks_table: str | None = typer.Option(
        None,
        "--tasks-table",
        help="Spark/Hive table with task_id, version, sql, dialect, owner, schedule, vars.",
    ),
    source_name: str | None = typer.Option(
        None,
        "--source",
        help="The source the tasks are loaded as; pruning removes only this source's tasks "
        "(default files:<absolute path> of --tasks, or table:<name> of --tasks-table).",
    ),
    catalog: Path | None = typer.Option(None, "--catalog", "-c", help="JSON schema catalog.", readable=False),
    spark_catalog: bool = typer.Option(
        False, "--spark-catalog", help="Take the schemas from the Spark/Hive catalog."
    ),
    master: str | None = typer.Option(
        None, "--master", help="Spark master (default WATERSHED_SPARK_MASTER, else local[*])."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Where each run's errors.jsonl and run.json go (default DATA_DIR/harvest)."
    ),
    graph: bool = typer.Option(
        True, "--graph/--no-graph", help="Load into the configured graph (WATERSHED_BACKEND)."
    ),
    prune: bool = typer.Option(
        True, "--prune/--no-prune", help="Delete tasks the graph has but the corpus lacks."
    ),
    prune_force: bool = typer.Option(
        False,
        "--prune-force",
        help="Prune even when the corpus is empty or would lose more than prune_max_fraction of the graph's tasks.",
    ),
) -> None:
    """Extract the lineage of every task with Spark and load it into the graph.

    Exit 1 when an input cannot be read, the run fails, or pruning was refused
    (the lineage loaded stays; the message lists what would be removed).
    """
    from watershed.api.service import harvest_runs
    from watershed.graph.backends import UnreachableGraphError
    from watershed.graph.settings import GraphSettings, data_dir
    from watershed.ingest.settings import IngestSettings

    if catalog is not None and spark_catalog:
        usage_error("give --catalog or --spark-catalog, not both")
    if (tasks is None) == (tasks_table is None):
        usage_error("give exactly one of --tasks or --tasks-table")
    if prune_force and not prune:
        usage_error("give --prune-force or --no-prune, not both")
    source = harvest_runs.HarvestSource(
        tasks=tasks, tasks_table=tasks_table, catalog=catalog, spark_catalog=spark_catalog, name=source_name
    )
    try:
        report = harvest_runs.run(
            source,
            out=out if out is not None else data_dir() / "harvest",
            settings=IngestSettings(),
            graph=GraphSettings() if graph else None,
            master=master,
            prune=prune,
            prune_force=prune_force,
            progress=console.print,
            started=console.print,
        )
    except UnreachableGraphError as exc:
        fail(f"{exc}; run `watershed services up`")
    except harvest_runs.HarvestRunError as exc:
        fail(str(exc))
    except Exception as exc:
        # The run record already says "failed" and why; the user gets one line naming it.
        notes = " ".join(getattr(exc, "__notes__", []))
        fail(
            f"harvest failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} {notes}".strip()
        )
    console.print(
        f"run {report.run_id}: {report.tasks} tasks, {report.loaded} loaded, {report.unchanged} unchanged, "
        f"{report.deleted} removed, {report.tasks_with_errors} with errors ({report.statement_errors} statements), "
        f"{len(report.source_problems)} unreadable records, {len(report.duplicates)} duplicate task ids; "
        f"extract {report.extract_seconds:.1f} s, load {report.load_seconds:.1f} s"
    )
    if report.taken_over:
        console.print(
            f"{report.taken_over} tasks taken over from other sources (now {report.source}'s): "
            f"{', '.join(report.taken_over_first)}"
            + (" ..." if report.taken_over > len(report.taken_over_first) else "")
        )
    if report.adopted:
        console.print(f"{report.adopted} tasks loaded before sources existed adopted as {report.source}'s")
    console.print(f"source {report.source}; errors and run record: {report.out_dir}")
    if report.status == "prune-refused":
        fail(report.prune_message)


def generate_command(
    out: Path = typer.Argument(..., help="Directory to write tasks/, tasks.jsonl and catalog.json into."),
    tasks: int = typer.Option(500, "--tasks", min=4, help="Number of tasks (one table each)."),
    seed: int = typer.Option(7, "--seed", help="Random seed; the same seed gives the same files."),
    data_tables: int = typer.Option(
        0, "--data-tables", min=0, help="ODS tables that also get small ORC partitions (for TTL savings)."
    ),
    data_partitions: int = typer.Option(
        30, "--data-partitions", min=1, help="Daily partitions per such table."
    ),
) -> None:
    """Generate a synthetic layered warehouse (ODS -> DWD -> DWS -> ADS) with SQL tasks and a catalog."""
    from watershed.ingest.generator import generate_warehouse

    try:
        summary = generate_warehouse(
            out, tasks=tasks, seed=seed, data_tables=data_tables, data_partitions=data_partitions
        )
    except OSError as exc:
        fail(f"{out}: cannot write the warehouse there ({exc.strerror or exc}: {exc.filename or out})")
    console.print(summary.__dict__)
