"""`watershed lineage reconcile [--job ID]`: edges only the SQL found and edges only the runtime
found, for every task that sent both (api/service/lineage_reconcile.py); `--format json` prints the
report GET /api/v1/tasks/{id}/reconcile gives per task."""

from __future__ import annotations

import typer
from rich.table import Table

from watershed.api.cli.graph import open_store
from watershed.api.cli.output import OutputFormat, console, fail, format_option, styled, write_model


def reconcile_command(
    job: str | None = typer.Option(
        None,
        "--job",
        help="Only this task: an OpenLineage job's task id, `namespace.name` (graph ids quoting).",
    ),
    output: OutputFormat = format_option("Output format: tables, or JSON (the report)."),
) -> None:
    """SQL lineage against runtime lineage: per task with a SQL facet and a columnLineage facet,
    the edges only Watershed's extractor found, only the engine reported, and kinds that differ."""
    from watershed.api.service.lineage_reconcile import NothingToReconcileError, reconcile

    store = open_store()
    try:
        report = reconcile(store, job)
    except NothingToReconcileError as exc:
        fail(str(exc))
    finally:
        store.close()
    if output is OutputFormat.json:
        write_model(report)
        return
    if not report.tasks:
        console.print(styled(("no task has both SQL and runtime lineage", "dim")))
        return
    for task in report.tasks:
        table = Table("found by", "source", "target", "kind", title=task.task)
        for edge in task.sql_only:
            table.add_row("SQL only", edge.source, edge.target, edge.kind)
        for edge in task.runtime_only:
            table.add_row("runtime only", edge.source, edge.target, edge.kind)
        for differs in task.kind_differs:
            table.add_row(
                "both", differs.source, differs.target, f"SQL {differs.sql}, runtime {differs.runtime}"
            )
        console.print(table)
        console.print(
            styled(
                (
                    f"{task.agreed} agreed, {len(task.sql_only)} SQL only, {len(task.runtime_only)} runtime only, "
                    f"{len(task.kind_differs)} kinds differ",
                    "dim",
                )
            )
        )
