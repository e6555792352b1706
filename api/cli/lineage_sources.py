"""`watershed lineage sources`: the graph's lineage sources, and the stale tasks of OpenLineage ones.

The work is api/service/lineage_sources.py's; `--format json` prints the pages
GET /api/v1/lineage/sources and /lineage/sources/stale return.
"""

from __future__ import annotations

import typer
from rich.table import Table

from watershed.api.cli.graph import open_store
from watershed.api.cli.output import OutputFormat, console, fail, format_option, styled, write_model


def sources_command(
    stale: bool = typer.Option(
        False, "--stale", help="List the stale tasks of OpenLineage sources instead of the sources."
    ),
    source: str | None = typer.Option(
        None, "--source", help="With --stale: only this source's tasks (an openlineage:* name)."
    ),
    stale_days: float | None = typer.Option(
        None,
        "--stale-days",
        min=0.001,
        max=36500,
        help="Days unseen after which a task is stale (default: the setting openlineage_stale_days, 7).",
    ),
    limit: int = typer.Option(100, "--limit", min=1, max=1000, help="Items per page."),
    cursor: str | None = typer.Option(None, "--cursor", help="The next_cursor a previous page printed."),
    output: OutputFormat = format_option("Output format: a table, or JSON (the Page the API returns)."),
) -> None:
    """The sources of the graph's tasks (harvest corpora, OpenLineage namespaces; "(none)": tasks
    loaded before sources existed) with their task counts, last seen time and stale counts; with
    --stale, the stale tasks themselves (reported, never deleted)."""
    from watershed.api.service import lineage_sources
    from watershed.api.service.pages import CursorError, decode_cursor
    from watershed.graph.settings import GraphSettings

    days = stale_days if stale_days is not None else GraphSettings().openlineage_stale_days
    try:
        after = decode_cursor(cursor).get("after")
        if after is not None and not isinstance(after, str):
            raise CursorError("cursor: not a cursor this command printed")
        store = open_store()
        try:
            if stale:
                page = lineage_sources.stale_tasks(
                    store, stale_days=days, source=source, after=after or "", limit=limit
                )
            else:
                if source is not None:
                    fail("--source goes with --stale (the sources list has every source)")
                page = lineage_sources.sources(store, stale_days=days, after=after, limit=limit)
        finally:
            store.close()
    except (CursorError, lineage_sources.LineageSourceError) as exc:
        fail(str(exc))
    if output is OutputFormat.json:
        write_model(page)
        return
    if stale:
        table = Table("task", "source", "last seen")
        for task in page.items:
            table.add_row(task.task_id, task.source, task.seen_at or "never")
        title = f"tasks not seen for {days:g} days (reported, never deleted)"
    else:
        table = Table("source", "kind", "tasks", "last seen", "stale")
        for item in page.items:
            table.add_row(
                item.name or "(none)",
                item.kind,
                str(item.tasks),
                item.last_seen or "never",
                str(item.stale) if item.kind == "openlineage" else "-",
            )
        title = f"stale: OpenLineage tasks not seen for {days:g} days"
    console.print(table)
    console.print(styled((title, "dim")))
    if page.next_cursor:
        console.print(styled((f"more: --cursor {page.next_cursor}", "dim")))
