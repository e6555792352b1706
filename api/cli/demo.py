"""`watershed demo`: the furthest the pipeline reaches, on bundled sample data."""

from __future__ import annotations

from importlib import resources

import typer
from rich.table import Table

from api.cli.lineage import print_lineage
from api.cli.output import console
from ingest.catalog import Catalog
from ingest.extract import extract_lineage
from ingest.model import SqlTask

SAMPLE_RUN_DATE = "2024-01-31"


def demo_command(
    details: bool = typer.Option(False, "--details", help="Also print every task's full lineage."),
) -> None:
    """Extract the lineage of the bundled sample warehouse scripts and print it as tables."""
    samples = resources.files("ingest") / "samples" / "warehouse"
    catalog = Catalog.from_dict(
        __import__("json").loads((samples / "catalog.json").read_text()), source="samples/catalog.json"
    )
    scripts = sorted(p for p in samples.iterdir() if p.name.endswith(".sql"))
    summary = Table(title=f"sample warehouse lineage (run date {SAMPLE_RUN_DATE})", title_justify="left")
    for header in ("task", "reads (window days)", "writes", "column edges", "weak refs", "errors"):
        summary.add_column(header)
    edges = Table(title="column lineage", title_justify="left")
    for header in ("source column", "kind", "functions", "target column"):
        edges.add_column(header)
    failed = 0
    for script in scripts:
        task = SqlTask(
            task_id=script.name.removesuffix(".sql"), sql=script.read_text(), vars={"date": SAMPLE_RUN_DATE}
        )
        result = extract_lineage(task, catalog)
        failed += len(result.errors)
        reads = ", ".join(
            f"{r.table} ({'∞' if r.partition_window_days is None else r.partition_window_days})"
            for r in result.reads
        )
        n_edges = sum(len(c.sources) for c in result.columns)
        summary.add_row(
            task.task_id,
            reads,
            ", ".join(result.writes),
            str(n_edges),
            str(len(result.weak_references)),
            str(len(result.errors)),
        )
        for column in result.columns:
            for source in column.sources:
                edges.add_row(source.id, source.kind, ", ".join(source.functions), column.target)
        if details:
            print_lineage(result)
    console.print(summary)
    console.print(edges)
    if failed:
        raise typer.Exit(1)
