"""`watershed lineage`: the lineage of one SQL script, as a table or JSON."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path

import typer
from rich.table import Table

from api.cli.output import console, fail, parse_assignments, styled
from ingest.catalog import Catalog, CatalogError
from ingest.extract import extract_lineage
from ingest.model import SqlTask, TaskLineage


class OutputFormat(StrEnum):
    table = "table"
    json = "json"


def lineage_command(
    file: Path = typer.Argument(..., help="SQL script to analyse ('-' reads standard input)."),
    dialect: str = typer.Option(
        "hive", "--dialect", "-d", help="sqlglot dialect of the script (hive, spark, ...)."
    ),
    catalog: Path | None = typer.Option(
        None,
        "--catalog",
        "-c",
        help="JSON schema catalog (format in the README) for star expansion and partitions.",
    ),
    var: list[str] = typer.Option(
        [], "--var", "-v", help="Variable for ${name} / ${hivevar:name}, as NAME=VALUE; repeatable."
    ),
    task_id: str | None = typer.Option(None, "--task-id", help="Task id to report (default: the file name)."),
    output: OutputFormat = typer.Option(OutputFormat.table, "--format", "-f", help="Output format."),
) -> None:
    """Extract table and column lineage, weak references, filters and partition windows of a SQL script."""
    if str(file) == "-":
        sql = sys.stdin.read()
        name = task_id or "stdin"
    else:
        try:
            sql = file.read_text()
        except OSError as exc:
            fail(f"{file}: cannot read the script ({exc.strerror or exc})")
        name = task_id or file.stem
    loaded = None
    if catalog is not None:
        try:
            loaded = Catalog.load(catalog)
        except CatalogError as exc:
            fail(str(exc))
    task = SqlTask(task_id=name, sql=sql, dialect=dialect, vars=parse_assignments(var, "--var"))
    result = extract_lineage(task, loaded)
    if output is OutputFormat.json:
        console.print_json(result.model_dump_json())
    else:
        print_lineage(result)
    if result.errors:
        raise typer.Exit(1)


def print_lineage(result: TaskLineage) -> None:
    console.print(
        styled(
            ("task", "bold"), f" {result.task_id}  ({result.dialect}, {len(result.statements)} statements)"
        )
    )
    reads = Table(title="tables read", title_justify="left")
    reads.add_column("table")
    reads.add_column("window (days)", justify="right")
    reads.add_column("predicates")
    for read in result.reads:
        window = "unbounded" if read.partition_window_days is None else str(read.partition_window_days)
        reads.add_row(read.table, window, "\n".join(p.text for p in read.predicates))
    console.print(reads)
    console.print(styled(("tables written:", "bold"), f" {', '.join(result.writes) or '(none)'}"))

    columns = Table(title="column lineage", title_justify="left")
    for header in ("target column", "source column", "kind", "functions"):
        columns.add_column(header)
    for column in result.columns:
        if not column.sources:
            columns.add_row(column.target, "(constant)", "", "")
        for source in column.sources:
            columns.add_row(column.target, source.id, source.kind, ", ".join(source.functions))
    console.print(columns)

    weak = Table(title="weak references", title_justify="left")
    for header in ("column", "role", "influences"):
        weak.add_column(header)
    for ref in result.weak_references:
        weak.add_row(ref.column, ref.role, ref.target_table)
    console.print(weak)

    for problem in result.unresolved:
        console.print(styled(("unresolved:", "yellow"), f" {problem}"))
    for error in result.errors:
        where = f"line {error.line}" + (f", column {error.column}" if error.column else "")
        console.print(
            styled(("error:", "red"), f" statement {error.statement_index} ({where}): {error.message}")
        )
