"""`watershed impact NODE`: every downstream table and column, grouped by owner (watershed.api.service.impact)."""

from __future__ import annotations

import sys
from enum import StrEnum

import typer
from rich.table import Table

from watershed.api.cli.output import console, fail, usage_error, write_model
from watershed.graph import ids


class ImpactFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def impact_command(
    node: str = typer.Argument(..., help="A table (db.table) or column (db.table.column)."),
    output: ImpactFormat = typer.Option(
        ImpactFormat.table,
        "--format",
        "-f",
        help="table, json (the API's model) or csv.",
        case_sensitive=False,
    ),
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        help="How many downstream nodes to list, nearest first (default 500, at most 5000).",
    ),
) -> None:
    """What a change to NODE reaches: each downstream table and column with its owner, layer, tags and TTL."""
    from watershed.api.cli.graph import open_store
    from watershed.api.service.impact import DEFAULT_LIMIT, MAX_LIMIT, impact, impact_csv

    text = node.strip().lower()
    try:
        parts = ids.split(text)
    except ids.InvalidIdError:
        parts = []
    if len(parts) not in (2, 3):
        usage_error(f"{node!r}: expected db.table or db.table.column")
    if limit is not None and limit > MAX_LIMIT:
        usage_error(f"--limit {limit}: at most {MAX_LIMIT}")
    canonical = ids.join(*parts)
    kind = "column" if len(parts) == 3 else "table"
    store = open_store()
    try:
        found = impact(store, canonical, kind, limit or DEFAULT_LIMIT)
    finally:
        store.close()
    if found is None:
        fail(f"{kind} {canonical} not found")
    if output is ImpactFormat.json:
        write_model(found)
        return
    if output is ImpactFormat.csv:
        sys.stdout.write(impact_csv(found))
        sys.stdout.flush()
        return
    shown = sum(group.count for group in found.groups)
    total = f"{found.total}+" if found.total_bounded else str(found.total)
    console.print(
        f"{canonical}: {total} downstream, {shown} listed" + (" (truncated)" if found.truncated else "")
    )
    for group in found.groups:
        view = Table(title=f"{group.owner or '(no owner)'}: {group.count}", title_justify="left")
        view.add_column("node", overflow="fold")
        for heading in ("kind", "via", "hops", "layer", "tags", "ttl"):
            view.add_column(heading)
        for item in group.items:
            tags = ", ".join(f"{key}={'|'.join(values)}" for key, values in item.tags.items())
            ttl = "" if item.ttl_days is None else f"{item.ttl_days} d"
            if item.ttl_status:
                ttl += f" ({item.ttl_status}" + (
                    f" {item.ttl_days_recommended} d)" if item.ttl_days_recommended is not None else ")"
                )
            view.add_row(item.id, item.kind, item.via, str(item.hops), item.layer or "", tags, ttl.strip())
        console.print(view)
