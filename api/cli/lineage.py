"""`watershed lineage`: the lineage of one SQL script, as a table or JSON; and the lineage group.

`watershed lineage FILE` analyses a script (it is `watershed lineage analyse FILE`); the group's
other commands (OpenLineage emission, reconcile, sources) register on `app` below, each from its
own module. A script whose file name is a command's name is given as `./NAME`.

Exit status: 0 when every statement was fully analysed; 1 when one could not be (a statement
error, or a reference left unresolved: an unknown column or table), or the input cannot be
read, or the script is beyond the analysis limits (`ingest.limits`); 2 on usage.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO, get_args

import click
import typer
from pydantic import TypeAdapter
from rich.table import Table
from typer.core import TyperGroup

from watershed.api.cli.output import (
    OutputFormat,
    console,
    fail,
    format_option,
    parse_assignments,
    styled,
    usage_error,
)
from watershed.graph.catalog import Catalog, CatalogError
from watershed.graph.lineage import SqlTask, TaskLineage
from watershed.ingest.extract import UnknownDialectError, check_dialect, extract_lineage
from watershed.ingest.limits import AnalysisLimitError, analysis_limits
from watershed.ingest.sources import TaskSourceError, decode_text


class _AnalyseByDefault(TyperGroup):
    """A group whose first argument, when it names no command, is the script of `analyse`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["analyse", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_AnalyseByDefault,
    no_args_is_help=True,
    help="Column lineage: of one SQL script (`watershed lineage FILE`), and OpenLineage in and out.",
)


@app.command("analyse")
def lineage_command(
    file: Path = typer.Argument(
        ..., help="SQL script to analyse ('-' reads standard input).", readable=False
    ),
    dialect: str = typer.Option(
        "hive", "--dialect", "-d", help="sqlglot dialect of the script (hive, spark, ...)."
    ),
    catalog: Path | None = typer.Option(
        None,
        "--catalog",
        "-c",
        help="JSON schema catalog (format in the README) for star expansion and partitions.",
        readable=False,
    ),
    var: list[str] = typer.Option(
        [], "--var", "-v", help="Variable for ${name} / ${hivevar:name}, as NAME=VALUE; repeatable."
    ),
    task_id: str | None = typer.Option(None, "--task-id", help="Task id to report (default: the file name)."),
    output: OutputFormat = format_option(),
) -> None:
    """Extract table and column lineage, weak references, filters and partition windows of a SQL script."""
    try:
        check_dialect(dialect)
    except UnknownDialectError as exc:
        usage_error(f"--dialect: {exc}")
    try:
        if str(file) == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            sql = decode_text(stdin.read(), "standard input") if stdin is not None else sys.stdin.read()
            name = task_id or "stdin"
        else:
            try:
                data = file.read_bytes()
            except OSError as exc:
                fail(f"{file}: cannot read the script ({exc.strerror or exc})")
            sql = decode_text(data, str(file))
            name = task_id or file.stem
    except TaskSourceError as exc:
        fail(str(exc))
    loaded = None
    if catalog is not None:
        try:
            loaded = Catalog.load(catalog)
        except CatalogError as exc:
            fail(str(exc))
        except RecursionError:
            # json's decoder recurses once per level of nesting
            fail(f"{catalog}: the catalog's JSON nests too deeply to read")
    task = SqlTask(task_id=name, sql=sql, dialect=dialect, vars=parse_assignments(var, "--var"))
    try:
        with analysis_limits(deadline="analysis_task_seconds"):
            result = extract_lineage(task, loaded)
    except AnalysisLimitError as exc:
        fail(f"{'standard input' if str(file) == '-' else file}: {exc}")
    if output is OutputFormat.json:
        write_json(result, sys.stdout)
    else:
        print_lineage(result)
    if result.errors or result.unresolved:
        raise typer.Exit(1)


def write_json(result: TaskLineage, out: TextIO) -> None:
    """`result` as indented JSON, written item by item.

    The JSON of a script of thousands of statements is hundreds of
    megabytes: neither it nor a re-parsed copy (rich's print_json) is ever
    held whole.
    """
    out.write("{")
    for position, (name, info) in enumerate(TaskLineage.model_fields.items()):
        value = getattr(result, name)
        out.write(f"{',' if position else ''}\n  {json.dumps(name)}: ")
        if not isinstance(value, list) or not value:
            out.write(json.dumps(value))
            continue
        adapter = TypeAdapter(get_args(info.annotation)[0])
        out.write("[")
        for index, item in enumerate(value):
            text = adapter.dump_json(item, indent=2).decode()
            # JSON strings never hold a raw newline: re-indenting by lines is safe.
            out.write(f"{',' if index else ''}\n    {text.replace(chr(10), chr(10) + '    ')}")
        out.write("\n  ]")
    out.write("\n}\n")


#: Rows rendered at once: rich renders a whole table in memory, hundreds of
#: bytes per cell, so the tables of a large script are printed in pages.
PAGE_ROWS = 500


def _print_table(title: str, headers: list[tuple[str, str]], rows: Iterable[tuple[str, ...]]) -> None:
    """A table printed page by page, its columns as wide on every page (title and header once)."""
    rows = list(rows)
    widths = [len(header) for header, _ in headers]
    for row in rows:
        for position, cell in enumerate(row):
            longest = max((len(line) for line in cell.split("\n")), default=0)
            if longest > widths[position]:
                widths[position] = longest
    for start in range(0, max(len(rows), 1), PAGE_ROWS):
        first = start == 0
        table = Table(title=title if first else None, title_justify="left", show_header=first)
        for (header, justify), width in zip(headers, widths, strict=True):
            table.add_column(header, justify=justify, min_width=width)
        for row in rows[start : start + PAGE_ROWS]:
            table.add_row(*row)
        console.print(table)


def print_lineage(result: TaskLineage) -> None:
    console.print(
        styled(
            ("task", "bold"), f" {result.task_id}  ({result.dialect}, {len(result.statements)} statements)"
        )
    )
    _print_table(
        "tables read",
        [("table", "left"), ("window (days)", "right"), ("predicates", "left")],
        (
            (
                read.table,
                "unbounded" if read.partition_window_days is None else str(read.partition_window_days),
                "\n".join(p.text for p in read.predicates),
            )
            for read in result.reads
        ),
    )
    console.print(styled(("tables written:", "bold"), f" {', '.join(result.writes) or '(none)'}"))

    # A column without sources is a constant only when its statement was fully analysed: an
    # unknown column leaves no source either, and calling it a constant would hide that
    unresolved_targets = {
        column.target
        for statement in result.statements
        if statement.unresolved
        for column in statement.columns
    }

    def column_rows() -> Iterator[tuple[str, ...]]:
        for column in result.columns:
            if not column.sources:
                shown = "(unresolved)" if column.target in unresolved_targets else "(constant)"
                yield (column.target, shown, "", "")
            for source in column.sources:
                yield (column.target, source.id, source.kind, ", ".join(source.functions))

    _print_table(
        "column lineage",
        [("target column", "left"), ("source column", "left"), ("kind", "left"), ("functions", "left")],
        column_rows(),
    )
    _print_table(
        "weak references",
        [("column", "left"), ("role", "left"), ("influences", "left")],
        ((ref.column, ref.role, ref.target_table) for ref in result.weak_references),
    )

    for problem in result.unresolved:
        console.print(styled(("unresolved:", "yellow"), f" {problem}"))
    for error in result.errors:
        where = f"line {error.line}" + (f", column {error.column}" if error.column else "")
        console.print(
            styled(("error:", "red"), f" statement {error.statement_index} ({where}): {error.message}")
        )
