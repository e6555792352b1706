"""`watershed ttl advise`: column retention recommendations from the lineage graph."""

from __future__ import annotations

import json
import time
from enum import StrEnum

import typer
from rich.table import Table

from watershed.api.cli.output import console, fail, styled

app = typer.Typer(
    help="Column-level TTL advice from how far back downstream tasks read.", no_args_is_help=True
)


class Format(StrEnum):
    table = "table"
    json = "json"


def _bytes(value: int | None) -> str:
    if value is None:
        return "unknown"
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(value)


@app.command("advise")
def advise_command(
    table: str | None = typer.Option(None, "--table", help="Only the columns of this table (db.table)."),
    min_savings: int = typer.Option(
        0, "--min-savings", min=0, help="Only recommendations freeing at least this many bytes (known sizes)."
    ),
    top: int = typer.Option(
        20, "--top", min=1, help="How many recommendations to print, most savings first."
    ),
    output: Format = typer.Option(Format.table, "--format", "-f", help="table or json."),
    margin_days: int | None = typer.Option(
        None, "--margin-days", min=0, help="Days added to the widest window (default from settings)."
    ),
) -> None:
    """Recommend a TTL per column: the widest downstream partition window plus a margin, capped by the table's TTL."""
    from watershed.api.cli.graph import open_store
    from watershed.graph.settings import GraphSettings
    from watershed.ttl_advisor.advisor import advise, top_by_savings
    from watershed.ttl_advisor.graph_uses import catalog_from_graph, index_graph
    from watershed.ttl_advisor.settings import AdvisorSettings
    from watershed.ttl_advisor.sizes import OrcSizeEstimator

    began = time.monotonic()
    # Settings first: a bad one is reported before any work.
    settings = AdvisorSettings() if margin_days is None else AdvisorSettings(ttl_margin_days=margin_days)
    graph_name = GraphSettings().graph_name
    store = open_store()
    catalog = catalog_from_graph(store)
    if not catalog.tables:
        # A mistyped WATERSHED_GRAPH_NAME opens an empty graph: "0 columns" would read as advice.
        fail(f"graph {graph_name!r} has no tables: no such graph, or nothing harvested into it yet")
    if table is not None and catalog.get(table.lower()) is None:
        fail(f"{table}: no such table in the graph")
    index = index_graph(store, catalog)
    estimator = OrcSizeEstimator(catalog, settings.ttl_sample_files)
    recommendations = advise(
        index, catalog, settings=settings, table=table.lower() if table else None, estimate=estimator
    )
    chosen = top_by_savings(recommendations, top, min_savings)
    elapsed = time.monotonic() - began
    shorter = sum(1 for r in recommendations if r.shorter_than_table)
    counts = {
        status: sum(1 for r in recommendations if r.status == status) for status in ("ttl", "keep", "unused")
    }
    if output is Format.json:
        console.print_json(
            json.dumps(
                {
                    "columns": len(recommendations),
                    "counts": counts,
                    "shorter_than_table": shorter,
                    "seconds": round(elapsed, 2),
                    "top": [r.model_dump() for r in chosen],
                }
            )
        )
        return
    view = Table(title=f"top {len(chosen)} columns by estimated savings", title_justify="left")
    for header in (
        "column",
        "status",
        "ttl",
        "table ttl",
        "widest use",
        "savings",
        "evidence (task: window, predicates)",
    ):
        view.add_column(header)
    for rec in chosen:
        evidence = "\n".join(
            f"{u.task_id}: {u.window_days if u.window_days is not None else '∞'} d {'; '.join(u.predicates)}"
            for u in rec.evidence[:3]
        ) + (f"\n(+{len(rec.evidence) - 3} more)" if len(rec.evidence) > 3 else "")
        view.add_row(
            rec.column,
            rec.status,
            str(rec.ttl_days or "-"),
            str(rec.table_ttl_days or "-"),
            str(rec.max_window_days or "-"),
            _bytes(rec.savings_bytes),
            evidence or "(no downstream use)",
        )
    console.print(view)
    console.print(
        f"{len(recommendations)} columns: {counts['ttl']} with a TTL ({shorter} shorter than their table's), "
        f"{counts['keep']} keep, {counts['unused']} unused; {elapsed:.1f} s"
    )
    for problem in estimator.problems[:5]:
        console.print(styled(("size unknown:", "yellow"), f" {problem}"))
